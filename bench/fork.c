/*
 * fork — a program that forks workers, as a pre-forking server, a shell or Python's
 * multiprocessing does: each thread keeps 2,000 live objects (16..1,535 bytes), replaces 50
 * of them between two forks, and forks; the child checks one of its parent's objects,
 * allocates and frees a few of its own and leaves with _exit; the parent reaps it before the
 * next fork. What it measures is what the allocator adds to a fork: its fork handlers (in the
 * parent and in every child), the pages the child copies because they write them, and the
 * address space fork copies. At 1 thread the work runs in the main thread, and the process
 * has that one thread (a shell, a Python program: the common forker); at 2 threads both
 * fork at once, and the handlers run with another thread in the allocator. Fixed total
 * forks, split over the threads.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define FK_LIVE 2000
#define FK_REPLACE 50

struct fk_worker {
	int id;
	uint64_t seed;
	uint64_t forks;
	uint64_t sum;
	char pad[64];
};

static size_t fk_size(uint64_t x)
{
	return 16 + (size_t)(x % 1520);
}

static void *fk_thread(void *arg)
{
	struct fk_worker *w = arg;
	struct bench_rng rng = bench_rng_make(w->seed, (uint64_t)w->id + 1);
	void **obj = bench_xmalloc_or_fail(FK_LIVE * sizeof *obj);
	size_t *size = bench_xmalloc_or_fail(FK_LIVE * sizeof *size);
	for (size_t k = 0; k < FK_LIVE; k++) {
		size[k] = fk_size(bench_rng_next(&rng));
		obj[k] = bench_xmalloc_or_fail(size[k]);
		bench_stamp(obj[k], size[k], k);
	}
	for (uint64_t i = 0; i < w->forks; i++) {
		for (int j = 0; j < FK_REPLACE; j++) {
			uint64_t x = bench_rng_next(&rng);
			size_t k = (size_t)(x % FK_LIVE);
			bench_check_stamp(obj[k], size[k], k, "fork: replace");
			free(obj[k]);
			size[k] = fk_size(x >> 20);
			obj[k] = bench_xmalloc_or_fail(size[k]);
			bench_stamp(obj[k], size[k], k);
			w->sum += size[k];
		}
		size_t k = (size_t)(bench_rng_next(&rng) % FK_LIVE);
		pid_t pid = fork();
		if (pid < 0)
			bench_fail("fork: fork failed");
		if (pid == 0) {
			/* The child: only what a worker does at once; _exit, no exit handlers. */
			const unsigned char *p = obj[k];
			int ok = p[size[k] - 1] == (unsigned char)(k ^ size[k]);
			void *mine[8];
			for (int j = 0; j < 8; j++) {
				mine[j] = malloc(32 + 96 * (size_t)j);
				ok &= mine[j] != NULL;
			}
			for (int j = 0; j < 8; j++)
				free(mine[j]);
			_exit(ok ? 0 : 3);
		}
		int status;
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			bench_fail("fork: a child failed (status %d)", status);
		w->sum += k;
	}
	for (size_t k = 0; k < FK_LIVE; k++) {
		bench_check_stamp(obj[k], size[k], k, "fork: final free");
		free(obj[k]);
	}
	free(size);
	free(obj);
	return NULL;
}

int bench_fork(const struct bench_args *a, struct bench_result *r)
{
	uint64_t total = bench_scaled(2000, a->scale, 10);
	struct fk_worker *w = calloc((size_t)a->threads, sizeof *w);
	if (!w)
		bench_fail("fork: calloc failed");
	for (int t = 0; t < a->threads; t++) {
		w[t].id = t;
		w[t].seed = a->seed;
		w[t].forks = bench_share(total, a->threads, t);
	}
	if (a->threads == 1) {
		bench_pin_self(0);
		fk_thread(w);
	} else {
		bench_run_threads(a->threads, fk_thread, w, sizeof *w);
	}
	for (int t = 0; t < a->threads; t++) {
		r->ops += w[t].forks;
		r->checksum += w[t].sum;
	}
	free(w);
	return 0;
}
