/*
 * stat_target — a live process for the `numapage stat` test (test_stat_cmd.py). It starts the
 * statistics module the way the library does (options, a 2-node table with OS ids 0 and 3,
 * np_vmstat_start_output, so the live file is created from NUMAPAGE_SHM), counts known events,
 * prints "ready <pid>" and then obeys stdin: "count N" adds N numa_hit on node 0 and answers
 * "ok"; "leader-exit" moves this loop to a new thread and ends the main thread (pthread_exit: the
 * process lives on, its leader a zombie) and answers "ok"; "exit" or end of input ends the
 * process (atexit removes the file).
 * Linked with np_core and the real OS layer.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "vmstat/vmstat.h"

static struct np_topo topo;

static void *counter(void *arg)
{
	(void)arg;
	static struct np_vmstat_diffs th; /* zero-filled, as the allocator's thread state */
	np_vmstat_register(&th);
	for (int i = 0; i < 1000; i++) {
		np_vmstat_add(&th, 0, NUMA_PAGE_STAT_numa_hit, 1);
		np_vmstat_add(&th, 0, NUMA_PAGE_STAT_local_node, 1);
	}
	np_vmstat_add(&th, 1, NUMA_PAGE_STAT_pages_in_use, 5);
	np_vmstat_unregister(&th); /* thread exit: folded, visible in the file */
	return NULL;
}

/* Obeys stdin until "exit" or its end; then the process exits. */
static void *obey(void *arg)
{
	(void)arg;
	char line[128];
	while (fgets(line, sizeof line, stdin)) {
		long n;
		if (strncmp(line, "exit", 4) == 0)
			break;
		if (strncmp(line, "leader-exit", 11) == 0) {
			pthread_t t;
			if (pthread_create(&t, NULL, obey, NULL) != 0)
				exit(1);
			printf("ok\n");
			fflush(stdout);
			pthread_exit(NULL);
		}
		if (sscanf(line, "count %ld", &n) == 1) {
			np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_numa_hit, n);
			printf("ok\n");
			fflush(stdout);
		}
	}
	exit(0);
}

int main(void)
{
	np_options_init();
	topo.nnodes = 2;
	topo.ncpus = topo.nallowed_cpus = 2;
	topo.nmem_nodes = 2;
	for (int i = 0; i < 2; i++) {
		topo.node[i].os_id = i * 3;
		topo.node[i].mem_bytes = 1ULL << 30;
		topo.node[i].has_memory = topo.node[i].mem_allowed = true;
		topo.node[i].nfallback = 2;
		topo.node[i].fallback[0] = (uint8_t)i;
		topo.node[i].fallback[1] = (uint8_t)(1 - i);
	}
	np_vmstat_init(&topo);
	np_vmstat_start_output();

	pthread_t t;
	if (pthread_create(&t, NULL, counter, NULL) != 0)
		return 1;
	pthread_join(t, NULL);
	np_vmstat_add(NULL, 1, NUMA_PAGE_STAT_numa_hit, 7);
	np_vmstat_add(NULL, 1, NUMA_PAGE_STAT_numa_miss, 3);
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_numa_foreign, 3);
	np_vmstat_add(NULL, 0, NUMA_PAGE_STAT_malloc_requested, 123456);

	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	obey(NULL);
	return 0;
}
