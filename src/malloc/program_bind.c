/*
 * program_bind.c — mbind(2)'s and move_pages(2)'s C wrappers, wrapped (shared library only), so
 * that memory of ours the program binds or moves to another node itself is bound and placed as
 * the library's again once it is freed (np_chunk_note_program_move). The kernel keeps a range's
 * policy and pages after the free, so the next block there, another thread's as likely,
 * faulted in on the node the program chose for the last one, and a run the thread's page cache
 * handed back had its pages there already. Seen here: a program's own call through numaif.h,
 * and libnuma's numa_tonode_memory, numa_tonodemask_memory, numa_interleave_memory,
 * numa_setlocal_memory and numa_move_pages, which call them through libnuma's PLT. Not
 * seen: a raw system call, or a call that binds to libnuma's definition first (-lnuma before
 * -lnumapage); for huge blocks the free asks the range's policy all the same (large.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <numaif.h>

#include "malloc/init.h"
#include "os.h"
#include "pool/chunk.h"

/* The call itself goes to the libnuma this library loads (np_os_program_mbind: the program's
 * own copy when it links one, the same object), not to dlsym(RTLD_NEXT)'s: where the program
 * reaches the name through this library alone (a link of -lnumapage -lnuma drops libnuma as not
 * needed), that lookup fails, and every failure allocates its message. libnuma is loaded after
 * the allocator is ready (its loader allocates). */
__attribute__((visibility("default"))) long mbind(void *addr, unsigned long len, int mode, const unsigned long *nodemask,
						   unsigned long maxnode, unsigned flags)
{
	np_ensure_ready();
	long r = np_os_program_mbind(addr, len, mode, nodemask, maxnode, flags);
	/* EIO: the policy is set, and some pages MPOL_MF_STRICT wanted moved were not; ENOMEM: the
	 * kernel may have set it on the mappings before the one it could not split. Other
	 * failures are refusals of the arguments, before anything changed (a review: a note of the
	 * range asked for walked every granule of an absurd length). errno is the call's: the
	 * note makes no system call. */
	if (r == 0 || errno == EIO || errno == ENOMEM)
		np_chunk_note_program_move(addr, len);
	return r;
}

__attribute__((visibility("default"))) long move_pages(int pid, unsigned long count, void **pages, const int *nodes,
							int *status, int flags)
{
	np_ensure_ready();
	long r = np_os_program_move_pages(pid, count, pages, nodes, status, flags);
	/* A move (not a query: nodes NULL) of this process's pages (pid 0, its own, or one of its
	 * threads'). The kernel moves them in batches, one per run of equal target nodes, so a
	 * failure (a bad node further on: ENODEV, EACCES; ENOMEM) may come after some moved: noted
	 * all the same, but for the refusals before any move (ESRCH, EPERM, EINVAL) and EFAULT,
	 * where pages itself may be unreadable (a review's NULL array crashed here), and E2BIG; a
	 * late EFAULT (status unwritable) is missed. */
	int e = errno;
	bool refused = r < 0 && (e == ESRCH || e == EPERM || e == EINVAL || e == E2BIG || e == EFAULT);
	if (nodes && !refused && np_os_same_process(pid)) {
		/* Pages that follow one another in the array and in memory, as one range: the
		 * note walks back to a run's head for each range (a review measured 0.5 ms for
		 * the 1,024 pages of a 4 MiB run noted one by one). */
		for (unsigned long i = 0, j; i < count; i = j) {
			uintptr_t start = (uintptr_t)pages[i] & ~(uintptr_t)(NP_PAGE_SIZE - 1), end = start + NP_PAGE_SIZE;
			for (j = i + 1; j < count && ((uintptr_t)pages[j] & ~(uintptr_t)(NP_PAGE_SIZE - 1)) == end; j++)
				end += NP_PAGE_SIZE;
			np_chunk_note_program_move((const void *)start, end - start);
		}
		errno = e;
	}
	return r;
}
