/*
 * onnode — one worker thread per NUMA node, each with a buffer on its own node.
 *
 * A NUMA machine has several "nodes": groups of CPUs with the memory attached to them. A CPU
 * reads its own node's memory faster than another node's, so a thread that works on a buffer
 * should have the buffer on the node it runs on. numa_page_alloc_onnode(size, node) gives
 * page-aligned memory on the node you name; numa_page_node_of(p) tells where memory is.
 *
 * Some nodes have CPUs but no memory ("memoryless" nodes, common on AMD EPYC and Threadripper).
 * Asking for memory there is not an error: the library serves it from the nearest node that
 * has memory and counts it, per node, as numa_foreign on the node you asked for (and numa_miss
 * on the node that served it). This program checks exactly that: a buffer is either on the node
 * asked for, or on another node while the asked node's numa_foreign counter says why.
 *
 * The buffers are freed by the main thread, not by the workers: memory may be freed from any
 * thread, and goes back to the node it came from.
 *
 * Build: cc onnode.c $(pkg-config --cflags --libs numapage) -pthread -o onnode
 * Run:   ./onnode        (or NUMAPAGE_TOPOLOGY=r7425.xml ./onnode to rehearse another machine)
 * Exit status 0 when every check passed, 1 otherwise.
 */
#include <numapage.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define BUF_SIZE (4u << 20) /* 4 MiB per worker */
#define MAX_WORKERS 256

struct worker {
	pthread_t thread;
	int node;       /* the node this worker asks for */
	char *buf;      /* its buffer, freed later by the main thread */
	int where;      /* numa_page_node_of(buf) */
	int ok;         /* 1: the buffer is where the library says it should be */
	unsigned long long foreign_before, foreign_after;
};

static unsigned long long foreign_of(int node)
{
	struct numa_page_node_stats s;
	return numa_page_stats_get(node, &s) == 0 ? s.numa_foreign : 0;
}

static void *work(void *arg)
{
	struct worker *w = arg;
	/* Make this thread's own small allocations come from its node too (optional here). */
	numa_page_set_home_node(w->node);

	w->foreign_before = foreign_of(w->node);
	w->buf = numa_page_alloc_onnode(BUF_SIZE, w->node);
	if (!w->buf) {
		perror("numa_page_alloc_onnode");
		return NULL;
	}
	/* Touch every page: a real worker would fill its buffer now. */
	memset(w->buf, w->node, BUF_SIZE);
	w->where = numa_page_node_of(w->buf);
	w->foreign_after = foreign_of(w->node);

	/* On the node asked for; or elsewhere and counted as foreign to the node asked for. Only
	 * this worker asks for this node, so the counter cannot have moved for anyone else. */
	w->ok = w->where == w->node || (w->where >= 0 && w->foreign_after > w->foreign_before);
	return NULL;
}

int main(void)
{
	static struct worker workers[MAX_WORKERS];
	int n = 0;

	/* Node ids may have gaps (0, 2, 5): the statistics of an id that is not a node answer -1. */
	for (int node = 0; node <= numa_page_max_node() && n < MAX_WORKERS; node++) {
		struct numa_page_node_stats s;
		if (numa_page_stats_get(node, &s) == 0)
			workers[n++].node = node;
	}
	printf("libnumapage %s: %d node(s)\n", numa_page_version(), n);

	for (int i = 0; i < n; i++)
		if (pthread_create(&workers[i].thread, NULL, work, &workers[i]) != 0) {
			fprintf(stderr, "onnode: cannot create a thread\n");
			return 1;
		}
	int failed = 0;
	for (int i = 0; i < n; i++) {
		struct worker *w = &workers[i];
		pthread_join(w->thread, NULL);
		if (!w->buf) {
			failed = 1;
			continue;
		}
		if (w->where == w->node)
			printf("worker %d: asked for node %d, got node %d\n", i, w->node, w->where);
		else
			printf("worker %d: asked for node %d, got node %d (node %d has no memory to give: "
			       "its nearest node served it; node %d's numa_foreign %llu -> %llu)\n", i,
			       w->node, w->where, w->node, w->node, w->foreign_before, w->foreign_after);
		if (!w->ok) {
			fprintf(stderr, "onnode: worker %d: numa_page_node_of says %d, expected %d\n", i,
				w->where, w->node);
			failed = 1;
		}
	}

	/* Free from this thread: memory goes back to the pool of the node it came from. */
	for (int i = 0; i < n; i++) {
		if (!workers[i].buf)
			continue;
		int node = numa_page_node_of(workers[i].buf);
		numa_page_free(workers[i].buf);
		printf("main: freed worker %d's buffer (node %d)\n", i, node);
	}
	printf(failed ? "FAILED\n" : "all buffers were where numa_page_node_of said\n");
	return failed;
}
