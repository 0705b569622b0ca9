/*
 * vmstat_bench — the cost of counting one event with np_vmstat_add when N threads count on the
 * same node: threshold 0 (every event an atomic add on the node's shared cache line), a fixed
 * 32, and the log-scaled threshold of this machine. Cost = CPU time of each thread / its
 * events (thread CPU time, so running more threads than CPUs does not inflate it), best of
 * -r rounds; the ratio is to one thread with the same threshold. Checks that the total equals
 * the events counted after every round.
 *   vmstat_bench [-m EVENTS_PER_THREAD] [-t MAX_THREADS] [-r ROUNDS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "options.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

static long events = 5000000;
static pthread_barrier_t go;

struct worker {
	struct np_vmstat_diffs *th;
	double cpu_ns;
} NP_ALIGNED(NP_CACHELINE);

static double thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	/* Each thread's diffs on their own pages, as the allocator's thread states are. */
	w->th = aligned_alloc(4096, (sizeof *w->th + 4095) / 4096 * 4096);
	memset(w->th, 0, sizeof *w->th);
	np_vmstat_register(w->th);
	pthread_barrier_wait(&go);
	double t0 = thread_cpu_ns();
	for (long i = 0; i < events; i++)
		np_vmstat_add(w->th, 0, NUMA_PAGE_STAT_numa_hit, 1);
	w->cpu_ns = thread_cpu_ns() - t0;
	np_vmstat_unregister(w->th);
	free(w->th);
	return NULL;
}

/* ns per event, averaged over the threads of one round; best of rounds. */
static double measure(int nthreads, int rounds)
{
	double best = 1e300;
	for (int r = 0; r < rounds; r++) {
		np_vmstat_reset();
		pthread_t tid[256];
		struct worker w[256];
		pthread_barrier_init(&go, NULL, (unsigned)nthreads);
		for (int i = 0; i < nthreads; i++) {
			w[i] = (struct worker){0};
			if (pthread_create(&tid[i], NULL, work, &w[i]) != 0) {
				perror("pthread_create");
				exit(1);
			}
		}
		double sum = 0;
		for (int i = 0; i < nthreads; i++) {
			pthread_join(tid[i], NULL);
			sum += w[i].cpu_ns;
		}
		pthread_barrier_destroy(&go);
		long total = np_vmstat_read(0, NUMA_PAGE_STAT_numa_hit);
		if (total != events * nthreads) {
			fprintf(stderr, "vmstat_bench: CHECK FAILED: total %ld, counted %ld\n", total,
				events * nthreads);
			exit(2);
		}
		double per = sum / nthreads / (double)events;
		if (per < best)
			best = per;
	}
	return best;
}

int main(int argc, char **argv)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int max_threads = (int)(ncpu > 0 ? ncpu * 2 : 2), rounds = 5;
	int opt;
	while ((opt = getopt(argc, argv, "m:t:r:")) != -1) {
		switch (opt) {
		case 'm': events = atol(optarg); break;
		case 't': max_threads = atoi(optarg); break;
		case 'r': rounds = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: vmstat_bench [-m EVENTS_PER_THREAD] [-t MAX_THREADS] [-r ROUNDS]\n");
			return 2;
		}
	}
	if (events < 1 || max_threads < 1 || max_threads > 256 || rounds < 1)
		return 2;

	np_options_init();
	static struct np_topo topo;
	np_topo_load(&topo, NULL, NULL); /* this machine; the one-node fallback if that fails */

	const char *variants[3] = {"0", "32", "-1"};
	int thr[3];
	int nthreads[16], nrows = 0;
	for (int n = 1; n <= max_threads && nrows < 16; n *= 2)
		nthreads[nrows++] = n;
	double ns[16][3];
	for (int v = 0; v < 3; v++) {
		if (np_options_set("STAT_THRESHOLD", variants[v]) != 0)
			return 1;
		np_vmstat_init(&topo);
		thr[v] = np_vmstat_threshold(0);
		for (int r = 0; r < nrows; r++)
			ns[r][v] = measure(nthreads[r], rounds);
	}

	printf("vmstat_bench: %ld events per thread on one node, %ld CPUs online, %d allowed, "
	       "node memory %llu MiB, best of %d\n",
	       events, ncpu, topo.nallowed_cpus, (unsigned long long)(topo.node[0].mem_bytes >> 20), rounds);
	printf("ns per event (thread CPU time / events) and ratio to 1 thread\n");
	printf("%8s", "threads");
	for (int v = 0; v < 3; v++) {
		char h[32];
		snprintf(h, sizeof h, v == 2 ? "log(%d)" : "thr=%d", thr[v]);
		printf("  %10s %6s", h, "ratio");
	}
	printf("\n");
	for (int r = 0; r < nrows; r++) {
		printf("%8d", nthreads[r]);
		for (int v = 0; v < 3; v++)
			printf("  %10.2f %6.2f", ns[r][v], ns[r][v] / ns[0][v]);
		printf("\n");
	}
	return 0;
}
