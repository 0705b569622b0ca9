/* version.c — the run-time version string, from the same numbers as numapage.h's macros. */
#include "internal.h"

#define NP_STR_(x) #x
#define NP_STR(x) NP_STR_(x)

const char *numa_page_version(void)
{
	return NP_STR(NUMA_PAGE_VERSION_MAJOR) "." NP_STR(NUMA_PAGE_VERSION_MINOR) "." NP_STR(NUMA_PAGE_VERSION_PATCH);
}
