/*
 * startup_rss — what is resident in a tiny program, to find what an allocator makes resident at
 * start-up. Run it with the allocator preloaded:
 *   LD_PRELOAD=build/src/libnumapage.so build/bench/startup_rss [out-file]
 * It takes a snapshot at main's first line (the dynamic loader, the libraries' constructors and
 * the allocator's own start-up have run; the program has not allocated), then does what a small
 * program does (a few mallocs and a printf), and takes another at the end. Each snapshot lists
 * every mapping of /proc/self/smaps with its Rss, and for the writable ones the runs of resident
 * pages (/proc/self/pagemap), so bench/startup_rss.py can name what they hold (the symbols of a
 * library's data and BSS, the heap, anonymous regions). VmHWM and ru_maxrss close the report.
 * No malloc of its own before the first snapshot, and none while one is taken: the snapshots
 * read and write with read(2)/write(2) through static buffers.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static char smaps[1 << 20];
static uint64_t pm[4096];
static char line[512];
static int out = 1;

static void put(const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(out, s, n);
		if (w <= 0)
			_exit(3);
		s += w;
		n -= (size_t)w;
	}
}

static size_t slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	size_t n = 0;
	ssize_t r;
	while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = 0;
	return n;
}

/* Runs of resident pages in [start, end), as "run OFFSET_KB LEN_KB" lines (offsets from start). */
/* The frame of the shared zero page, which a read of anonymous memory nobody wrote maps (Rss
 * does not count it): found by reading a fresh page; 0 when pagemap hides frames (not root). */
static uint64_t zero_pfn(int pmfd)
{
	static uint64_t pfn = UINT64_MAX;
	if (pfn != UINT64_MAX)
		return pfn;
	pfn = 0;
	volatile char *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return pfn;
	(void)p[0];
	uint64_t v;
	if (pread(pmfd, &v, 8, (off_t)(((uintptr_t)p >> 12) * 8)) == 8 && (v >> 63) & 1)
		pfn = v & (((uint64_t)1 << 55) - 1);
	munmap((void *)p, 4096);
	return pfn;
}

/* anon: the mapping has no file behind it; its pages that are the zero page are not resident. */
static void resident_runs(int pmfd, uintptr_t start, uintptr_t end, int anon)
{
	uint64_t zero = anon ? zero_pfn(pmfd) : 0;
	uintptr_t run_start = 0, page;
	int in_run = 0;
	for (page = start; page < end;) {
		size_t n = (end - page) >> 12;
		if (n > sizeof pm / sizeof pm[0])
			n = sizeof pm / sizeof pm[0];
		ssize_t r = pread(pmfd, pm, n * 8, (off_t)((page >> 12) * 8));
		if (r <= 0)
			break;
		n = (size_t)r / 8;
		for (size_t i = 0; i < n; i++, page += 4096) {
			int present = (pm[i] >> 63) & 1 && !(zero && (pm[i] & (((uint64_t)1 << 55) - 1)) == zero);
			if (present && !in_run) {
				run_start = page;
				in_run = 1;
			} else if (!present && in_run) {
				snprintf(line, sizeof line, "run %lu %lu\n", (unsigned long)((run_start - start) >> 10),
					 (unsigned long)((page - run_start) >> 10));
				put(line);
				in_run = 0;
			}
		}
	}
	if (in_run) {
		snprintf(line, sizeof line, "run %lu %lu\n", (unsigned long)((run_start - start) >> 10),
			 (unsigned long)((page - run_start) >> 10));
		put(line);
	}
}

static void snapshot(const char *when)
{
	snprintf(line, sizeof line, "snapshot %s\n", when);
	put(line);
	slurp("/proc/self/smaps", smaps, sizeof smaps);
	int pmfd = open("/proc/self/pagemap", O_RDONLY);
	char *s = smaps;
	unsigned long total = 0;
	while (*s) {
		char *eol = strchr(s, '\n');
		if (!eol)
			break;
		*eol = 0;
		unsigned long a, b, off;
		char perms[8], dev[16];
		unsigned long inode;
		int pos = 0;
		if (sscanf(s, "%lx-%lx %7s %lx %15s %lu %n", &a, &b, perms, &off, dev, &inode, &pos) >= 6) {
			const char *path = s + pos;
			/* The mapping's Rss line follows */
			char *r = strstr(eol + 1, "\nRss:");
			unsigned long rss = r ? strtoul(r + 5, NULL, 10) : 0;
			char *an = strstr(eol + 1, "\nAnonymous:");
			unsigned long anon = an ? strtoul(an + 11, NULL, 10) : 0;
			total += rss;
			snprintf(line, sizeof line, "map %lx %lx %s %lx rss_kb=%lu anon_kb=%lu %s\n", a, b, perms, off, rss,
				 anon, *path ? path : "[anon]");
			put(line);
			if (rss && perms[1] == 'w' && pmfd >= 0)
				resident_runs(pmfd, a, b, !*path || (*path == '[' && strcmp(path, "[stack]") != 0));
		}
		s = eol + 1;
	}
	if (pmfd >= 0)
		close(pmfd);
	slurp("/proc/self/status", smaps, sizeof smaps);
	char *h = strstr(smaps, "VmHWM:"), *rs = strstr(smaps, "VmRSS:");
	snprintf(line, sizeof line, "total rss_kb=%lu VmHWM_kb=%lu VmRSS_kb=%lu\n", total, h ? strtoul(h + 6, NULL, 10) : 0,
		 rs ? strtoul(rs + 6, NULL, 10) : 0);
	put(line);
}

int main(int argc, char **argv)
{
	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		/* An option is not a file name: "--help" once became a file of that name. */
		static const char usage[] = "usage: startup_rss [out-file]  (run with the allocator in LD_PRELOAD)\n";
		if (write(2, usage, sizeof usage - 1) < 0)
			return 2;
		return strcmp(argv[1], "--help") == 0 ? 0 : 2;
	}
	if (argc == 2) {
		out = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (out < 0) {
			perror(argv[1]);
			return 1;
		}
	}
	snapshot("main");
	/* What a small program does: a few small objects, a buffer, stdio. */
	void *p[64];
	for (int i = 0; i < 64; i++)
		p[i] = malloc((size_t)(16 + i * 24));
	char *buf = malloc(8192);
	if (!buf)
		return 1;
	snprintf(buf, 8192, "startup_rss: %d objects\n", 64);
	fputs(buf, stderr);
	for (int i = 0; i < 64; i++)
		free(p[i]);
	free(buf);
	snapshot("end");
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	snprintf(line, sizeof line, "ru_maxrss_kb=%ld\n", ru.ru_maxrss);
	put(line);
	return 0;
}
