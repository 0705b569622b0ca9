/*
 * fork_pages — a fork's child copies none of its parent's block pages in the library's fork
 * handlers. A page the child writes is copied (copy-on-write: a page fault and 4 KiB copied,
 * in every child of every fork), and the handlers used to write the header of every slab with
 * counts to take: those of the forking thread, to drop the parent's events from the child's
 * statistics, and those of every thread that did not come along, to keep the bytes their
 * blocks hold (a child of a two-thread parent took 46 page faults against mimalloc's 27 in
 * bench's fork/2). The child now only reads them.
 *
 * Two threads each allocate blocks of 40 size classes and free a third of them (their slabs
 * then have counts to take); the second one waits in a read while the first forks. The child,
 * before it does anything that could write the heap, reads /proc/self/pagemap for every page
 * that holds a block or the header of a block's slab: a page it has copied is mapped
 * exclusively (bit 56, Linux 4.2), one still shared with the parent is not. The library's own
 * state (the forking thread's struct, its locks and counters) is written in the child and is
 * not on those pages. Exit 0 when none was copied; 77 (skipped) where pagemap cannot be read.
 * Linked with the static library, for the slab headers' places (np_slab_at_step).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "malloc/slab.h"

enum { CLASSES = 40, PER_CLASS = 300, N = CLASSES * PER_CLASS };

struct set {
	void *block[N];
};

static struct set sets[2];
static uintptr_t pages[4 * N];
static size_t npages;
static int go[2], ready[2];

static void fill(struct set *s)
{
	for (int i = 0; i < N; i++) {
		size_t size = 16 + (size_t)(i % CLASSES) * 48;
		s->block[i] = malloc(size);
		if (!s->block[i])
			abort();
		memset(s->block[i], 0x5a, size);
	}
	for (int i = 0; i < N; i += 3) {
		free(s->block[i]);
		s->block[i] = NULL;
	}
}

static void *other(void *arg)
{
	(void)arg;
	fill(&sets[1]);
	char c = 1;
	if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
		abort();
	return NULL;
}

static int by_address(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* The pages that hold a block (its first byte) or its slab's header, sorted, each once. */
static void block_pages(long page)
{
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < N; i++)
			if (sets[k].block[i]) {
				const void *p = sets[k].block[i];
				struct np_slab *s = np_slab_at_step(p);
				if (!s->owner)
					s = np_slab_lead((uintptr_t)p);
				if (!s)
					abort();
				pages[npages++] = (uintptr_t)p / (uintptr_t)page;
				pages[npages++] = (uintptr_t)s / (uintptr_t)page;
			}
	qsort(pages, npages, sizeof pages[0], by_address);
	size_t n = 0;
	for (size_t i = 0; i < npages; i++)
		if (n == 0 || pages[n - 1] != pages[i])
			pages[n++] = pages[i];
	npages = n;
}

/* In the child: how many of the block pages it has copied (-1: pagemap unreadable). */
static long copied(void)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -1;
	long c = 0;
	for (size_t i = 0; i < npages; i++) {
		uint64_t e;
		if (pread(fd, &e, sizeof e, (off_t)(pages[i] * sizeof e)) != (ssize_t)sizeof e) {
			close(fd);
			return -1;
		}
		c += (long)((e >> 63 & 1) && (e >> 56 & 1));
	}
	close(fd);
	return c;
}

int main(void)
{
	long page = sysconf(_SC_PAGESIZE);
	if (pipe(go) != 0 || pipe(ready) != 0)
		return 1;
	fill(&sets[0]);
	pthread_t t;
	char c;
	if (pthread_create(&t, NULL, other, NULL) != 0 || read(ready[0], &c, 1) != 1)
		return 1;
	block_pages(page);

	int fds[2];
	if (pipe(fds) != 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		long result = copied();
		_exit(write(fds[1], &result, sizeof result) == (ssize_t)sizeof result ? 0 : 1);
	}
	long result = -2;
	ssize_t got = read(fds[0], &result, sizeof result);
	int status;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
	    got != (ssize_t)sizeof result)
		return 1;
	if (write(go[1], &c, 1) != 1 || pthread_join(t, NULL) != 0)
		return 1;
	if (result < 0) {
		printf("skipped: /proc/self/pagemap cannot be read\n");
		return 77;
	}
	printf("the child copied %ld of the %zu pages that hold blocks or their slabs' headers\n", result, npages);
	return result == 0 ? 0 : 1;
}
