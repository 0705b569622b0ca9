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
#include <errno.h>
#include <numaif.h>

#include "malloc/init.h"
#include "malloc/thread.h"
#include "os.h"

/* The call goes to the libnuma this library loads, the program's own when it links one (the same
 * object): not to dlsym(RTLD_NEXT)'s, which fails for a program that reaches the name through
 * this library alone and allocates its message at every failure (program_bind.c). libnuma is
 * loaded, where it was not, after the allocator is ready (its loader allocates). */
__attribute__((visibility("default"))) long set_mempolicy(int mode, const unsigned long *nodemask,
							   unsigned long maxnode)
{
	np_ensure_ready();
	int rc = np_os_set_mempolicy(mode, nodemask, maxnode);
	if (rc < 0) {
		errno = -rc;
		return -1;
	}
	np_tls.policy_set = true;
	return 0;
}
