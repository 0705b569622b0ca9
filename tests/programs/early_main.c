/*
 * early_main.c — the program of the early-allocation test (early_ctor.c does the work in its
 * library's constructor). Run with libnumapage preloaded and EARLY_CASE set; prints the
 * constructor's report and whether main's own malloc is libnumapage's (looked up at run time:
 * the program is not linked with the library).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

const char *early_report(void);

int main(void)
{
	int (*node_of)(const void *) = (int (*)(const void *))dlsym(RTLD_DEFAULT, "numa_page_node_of");
	void *p = malloc(64);
	printf("%s\nmain: %s\n", early_report(),
	       node_of && p && node_of(p) >= 0 ? "malloc is libnumapage's" : "malloc is NOT libnumapage's");
	free(p);
	return 0;
}
