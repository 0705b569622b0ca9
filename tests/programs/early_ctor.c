/*
 * early_ctor.c — a library whose constructor allocates before libnumapage's constructor has
 * run (when libnumapage is preloaded, the program's own libraries are initialised first), as
 * the constructors of real libraries do (issue 13: such mallocs went to a capped start-up
 * arena that never reused memory). EARLY_CASE picks what it does:
 *   big    40 x (1 MiB malloc, write, free): resident memory must not pile up
 *   small  300,000 x (256 B malloc, write, free): must never return NULL
 *   mixed  100 x (2 MiB malloc, free), then a realloc doubling from 1 B to 64 MiB
 * Its findings go to early_main through early_report().
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char report[256];

static long rss_kib(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	long size, rss;
	return sscanf(buf, "%ld %ld", &size, &rss) == 2 ? rss * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

__attribute__((constructor)) static void allocate_early(void)
{
	const char *c = getenv("EARLY_CASE");
	if (!c)
		return;
	if (!strcmp(c, "big")) {
		long before = rss_kib();
		for (int i = 0; i < 40; i++) {
			char *p = malloc(1 << 20);
			if (!p) {
				snprintf(report, sizeof report, "big: NULL at %d", i);
				return;
			}
			memset(p, i, 1 << 20);
			free(p);
		}
		snprintf(report, sizeof report, "big: rss grew %ld KiB", rss_kib() - before);
	} else if (!strcmp(c, "small")) {
		for (int i = 0; i < 300000; i++) {
			char *p = malloc(256);
			if (!p) {
				snprintf(report, sizeof report, "small: NULL at %d", i);
				return;
			}
			p[0] = p[255] = 1;
			free(p);
		}
		snprintf(report, sizeof report, "small: ok");
	} else if (!strcmp(c, "mixed")) {
		for (int i = 0; i < 100; i++) {
			char *p = malloc(2 << 20);
			if (!p) {
				snprintf(report, sizeof report, "mixed: NULL at %d", i);
				return;
			}
			p[0] = 1;
			free(p);
		}
		char *q = NULL;
		for (size_t n = 1; n <= ((size_t)64 << 20); n *= 2) {
			char *r = realloc(q, n);
			if (!r) {
				snprintf(report, sizeof report, "mixed: realloc to %zu failed", n);
				free(q);
				return;
			}
			q = r;
			q[n - 1] = 2;
			if (n > 1 && q[n / 2 - 1] != 2) {
				snprintf(report, sizeof report, "mixed: realloc to %zu lost the contents", n);
				return;
			}
		}
		free(q);
		snprintf(report, sizeof report, "mixed: ok");
	}
}

const char *early_report(void)
{
	return report;
}
