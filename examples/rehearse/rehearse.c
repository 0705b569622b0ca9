/*
 * rehearse — where would my threads and their memory go on a machine I do not have?
 *
 * libnumapage normally reads this machine's NUMA layout. With NUMAPAGE_TOPOLOGY=FILE (an hwloc
 * XML file, such as tests/topologies/r7425.xml, a 2-socket AMD EPYC 7425 whose 8 nodes include
 * 6 without memory) it believes it runs on that machine instead: every node, node distance and
 * "fallback order" (which node serves a node that has no memory) comes from the file. The memory
 * is still this machine's; only the bookkeeping is the rehearsed machine's, so the program runs
 * anywhere and its statistics show what the real machine would do.
 *
 * Each thread has a "home node": the node its allocations come from. Here it is chosen either
 * by the library (NUMAPAGE_PLACE=spread: each new thread goes to the node with fewest threads)
 * or by the program itself (argument --set-home: thread i calls numa_page_set_home_node on the
 * i-th node). Each thread then allocates with plain malloc and reports its home node and the
 * nodes its memory came from (numa_page_node_of). A thread of a memoryless node may get memory
 * from more than one node: nodes at the same distance share the load. The per-node table at
 * the end is the same one `numapage run --stats` and NUMAPAGE_STATS=1 print.
 *
 * Build: cc rehearse.c $(pkg-config --cflags --libs numapage) -pthread -o rehearse
 * Run:   see rehearse.sh; the exit status is 1 if a thread's memory is not where the library said.
 */
#include <numapage.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCKS 256
#define BLOCK_SIZE 4096
#define MAX_THREADS 64 /* and node ids below 64: one bit each in a uint64_t */

struct job {
	pthread_t thread;
	int want_home; /* -1: let the library (or the CPU) decide */
	int home;      /* numa_page_home_node() once running */
	uint64_t mem;  /* bit n: a block came from node n */
	int foreign;   /* blocks that numa_page_node_of did not know (must stay 0) */
};

/* Every thread stays alive until all have allocated: placement counts the living threads. */
static pthread_barrier_t all_placed;

static void *work(void *arg)
{
	struct job *j = arg;
	if (j->want_home >= 0 && numa_page_set_home_node(j->want_home) != 0) {
		perror("numa_page_set_home_node");
		return NULL;
	}
	void *blocks[BLOCKS];
	for (int i = 0; i < BLOCKS; i++) {
		blocks[i] = malloc(BLOCK_SIZE); /* an ordinary malloc: libnumapage serves it */
		if (!blocks[i])
			abort();
		memset(blocks[i], 1, BLOCK_SIZE);
	}
	/* Read the home node after the first allocation: that is when a new thread is placed. */
	j->home = numa_page_home_node();
	for (int i = 0; i < BLOCKS; i++) {
		int node = numa_page_node_of(blocks[i]);
		if (node >= 0 && node < 64)
			j->mem |= (uint64_t)1 << node;
		else
			j->foreign++;
	}
	pthread_barrier_wait(&all_placed);
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	int set_home = argc > 1 && strcmp(argv[1], "--set-home") == 0;
	int nodes[MAX_THREADS], nnodes = 0;
	for (int n = 0; n <= numa_page_max_node() && nnodes < MAX_THREADS; n++) {
		struct numa_page_node_stats s;
		if (numa_page_stats_get(n, &s) == 0) /* n is a node id */
			nodes[nnodes++] = n;
	}
	/* One thread per node of the (rehearsed) machine. */
	static struct job jobs[MAX_THREADS];
	printf("main thread: home node %d; %d node(s); starting %d threads (%s)\n",
	       numa_page_home_node(), nnodes, nnodes,
	       set_home ? "each sets its home node" : "the library places them");
	pthread_barrier_init(&all_placed, NULL, (unsigned)nnodes + 1);
	for (int i = 0; i < nnodes; i++) {
		jobs[i].want_home = set_home ? nodes[i] : -1;
		jobs[i].home = -1;
		if (pthread_create(&jobs[i].thread, NULL, work, &jobs[i]) != 0) {
			fprintf(stderr, "rehearse: cannot create a thread\n");
			return 1;
		}
	}
	pthread_barrier_wait(&all_placed);
	for (int i = 0; i < nnodes; i++)
		pthread_join(jobs[i].thread, NULL);
	int bad = 0;
	for (int i = 0; i < nnodes; i++) {
		printf("thread %d: home node %d, memory from node", i, jobs[i].home);
		for (int n = 0; n < 64; n++)
			if (jobs[i].mem >> n & 1)
				printf(" %d", n);
		printf("\n");
		if (!jobs[i].mem || jobs[i].foreign || (set_home && jobs[i].home != nodes[i]))
			bad = 1;
	}
	printf("\nper-node statistics (pages; malloc_* in bytes):\n");
	fflush(stdout);
	numa_page_stats_print(stdout, NUMA_PAGE_STATS_TABLE);
	return bad;
}
