/*
 * stream.c — a STREAM-style triad per thread (a[i] = b[i] + s * c[i]), for measuring what
 * thread placement (NUMAPAGE_PLACE=spread) and node-local memory buy on a multi-node machine.
 * Each thread mallocs and first-touches its own three arrays, then runs the triad; the result
 * is checked, and the run prints the aggregate bandwidth and how many threads ran on each node
 * (sched_getcpu + libnuma's numa_node_of_cpu), so a run shows whether the threads were spread.
 *
 *   stream [--threads N] [--mb MB_PER_THREAD] [--iters K]
 */

#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct job {
	size_t n;
	int iters;
	pthread_barrier_t *start, *stop;
	int node;
	double check;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *triad(void *arg)
{
	struct job *j = arg;
	double *a = malloc(j->n * sizeof *a), *b = malloc(j->n * sizeof *b), *c = malloc(j->n * sizeof *c);
	if (!a || !b || !c) {
		fprintf(stderr, "stream: out of memory\n");
		exit(1);
	}
	for (size_t i = 0; i < j->n; i++) { /* first touch by the thread that uses the arrays */
		a[i] = 0;
		b[i] = 1.0;
		c[i] = 2.0;
	}
	int cpu = sched_getcpu();
	j->node = cpu >= 0 && numa_available() >= 0 ? numa_node_of_cpu(cpu) : 0;
	pthread_barrier_wait(j->start);
	for (int k = 0; k < j->iters; k++)
		for (size_t i = 0; i < j->n; i++)
			a[i] = b[i] + 3.0 * c[i];
	pthread_barrier_wait(j->stop);
	j->check = a[0] + a[j->n - 1];
	free(a);
	free(b);
	free(c);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 2, iters = 20;
	double mb = 48;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--threads"))
			threads = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--mb"))
			mb = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--iters"))
			iters = atoi(argv[i + 1]);
		else {
			fprintf(stderr, "usage: stream [--threads N] [--mb MB_PER_THREAD] [--iters K]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > 1024 || iters < 1 || mb <= 0)
		return 2;
	size_t n = (size_t)(mb * 1e6 / 3 / sizeof(double));
	pthread_barrier_t start, stop;
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	pthread_barrier_init(&stop, NULL, (unsigned)threads + 1);
	pthread_t *t = calloc((size_t)threads, sizeof *t);
	struct job *j = calloc((size_t)threads, sizeof *j);
	for (int i = 0; i < threads; i++) {
		j[i] = (struct job){.n = n, .iters = iters, .start = &start, .stop = &stop};
		pthread_create(&t[i], NULL, triad, &j[i]);
	}
	pthread_barrier_wait(&start);
	double t0 = now();
	pthread_barrier_wait(&stop);
	double dt = now() - t0;
	int per_node[1024] = {0}, maxnode = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		if (j[i].check != 2 * 7.0) {
			fprintf(stderr, "stream: thread %d computed %g, expected 14\n", i, j[i].check);
			return 1;
		}
		if (j[i].node >= 0 && j[i].node < 1024) {
			per_node[j[i].node]++;
			if (j[i].node > maxnode)
				maxnode = j[i].node;
		}
	}
	double bytes = 3.0 * sizeof(double) * (double)n * iters * threads;
	printf("stream threads=%d mb_per_thread=%g iters=%d seconds=%.3f GB/s=%.2f threads_per_node=", threads,
	       mb, iters, dt, bytes / dt / 1e9);
	for (int i = 0; i <= maxnode; i++)
		printf("%s%d", i ? "," : "", per_node[i]);
	printf("\n");
	return 0;
}
