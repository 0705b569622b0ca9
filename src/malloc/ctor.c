/*
 * ctor.c — initialises the allocator when the library is loaded, after the libraries it depends
 * on (libc, hwloc, libnuma) are ready; mallocs made before that are served by the bootstrap
 * arena. Part of libnumapage only (unit tests initialise explicitly).
 */
#include "malloc/init.h"

const int np_ctor_anchor = 1;

__attribute__((constructor)) static void np_ctor(void)
{
	np_init();
}
