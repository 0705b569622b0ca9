/*
 * set_mempolicy.c — set_mempolicy(2)'s C wrapper, wrapped (shared library only), so that a
 * thread that sets its memory policy while it runs has it followed from its next slow path
 * (home.h): a program's own call through numaif.h, and libnuma's numa_set_preferred,
 * numa_set_interleave_mask, numa_set_membind and numa_set_localalloc, which call it through
 * libnuma's PLT. The policy is read when a thread's state is made, which for the main thread is
 * before main() runs (the C library's start-up allocates): without this, a policy the program
 * set at the top of main() was never followed. A raw system call is not seen here, nor a call
 * that binds to libnuma's definition first (-lnuma before -lnumapage): the look of home.h
 * finds those within 10 ms.
 */
#include <dlfcn.h>
#include <errno.h>
#include <numaif.h>

#include "malloc/init.h"
#include "malloc/thread.h"
#include "os.h"

typedef long (*set_fn)(int, const unsigned long *, unsigned long);
static set_fn real_set;

__attribute__((visibility("default"))) long set_mempolicy(int mode, const unsigned long *nodemask,
							   unsigned long maxnode)
{
	set_fn real = __atomic_load_n(&real_set, __ATOMIC_ACQUIRE);
	if (NP_UNLIKELY(!real)) {
		/* libnuma's where the program or a library of its links it; a later wrapper's
		 * where one comes first. */
		real = (set_fn)dlsym(RTLD_NEXT, "set_mempolicy");
		if (real)
			__atomic_store_n(&real_set, real, __ATOMIC_RELEASE);
	}
	long r;
	if (real) {
		r = real(mode, nodemask, maxnode);
	} else {
		/* A program that reaches the call through this library alone (not linked with
		 * libnuma), which loads libnuma only on machines of several nodes: loaded now,
		 * after the allocator is ready (its loader allocates). */
		np_ensure_ready();
		int rc = np_os_set_mempolicy(mode, nodemask, maxnode);
		if (rc < 0)
			errno = -rc;
		r = rc < 0 ? -1 : 0;
	}
	if (r == 0)
		np_tls.policy_set = true;
	return r;
}
