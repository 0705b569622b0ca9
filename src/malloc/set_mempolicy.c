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

#include "malloc/thread.h"

typedef long (*set_fn)(int, const unsigned long *, unsigned long);
static set_fn real_set;

__attribute__((visibility("default"))) long set_mempolicy(int mode, const unsigned long *nodemask,
							   unsigned long maxnode)
{
	set_fn real = __atomic_load_n(&real_set, __ATOMIC_ACQUIRE);
	if (NP_UNLIKELY(!real)) {
		/* libnuma's, which the library links; a later wrapper's where one comes first. */
		real = (set_fn)dlsym(RTLD_NEXT, "set_mempolicy");
		if (real)
			__atomic_store_n(&real_set, real, __ATOMIC_RELEASE);
	}
	if (!real) { /* libnuma is loaded with the library: not seen */
		errno = ENOSYS;
		return -1;
	}
	long r = real(mode, nodemask, maxnode);
	if (r == 0)
		np_tls.policy_set = true;
	return r;
}
