/*
 * ctor.c — initialises the allocator when the library is loaded, if no allocation has done so
 * already (the first malloc of the process runs np_init: see init.h). Part of libnumapage only
 * (unit tests initialise explicitly).
 */
#include "malloc/background.h"
#include "malloc/init.h"

const int np_ctor_anchor = 1;

__attribute__((constructor)) static void np_ctor(void)
{
	np_init();
	/* NUMAPAGE_BACKGROUND_THREAD in the environment: here, outside any allocator call. */
	if (np_is_ready())
		np_background_start();
}
