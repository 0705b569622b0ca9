/*
 * api_malloc_libc.c — api_malloc.c against the libc names (malloc, free, ...) that libnumapage
 * exports: the same contracts must hold for programs that never heard of numa_page_*.
 */
#define API_LIBC 1
#include "api_malloc.c"
