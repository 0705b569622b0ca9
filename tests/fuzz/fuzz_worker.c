/*
 * fuzz_worker.c — the second thread and its command queue (see fuzz_worker.h). A ring of
 * commands under one mutex: the main thread is the only producer, the worker the only
 * consumer; `done` counts commands run, so a waiting caller knows when its own has. The
 * synchronous commands point into the caller's table, which it leaves alone until done.
 */
#include "fuzz_worker.h"

#include <errno.h>
#include <pthread.h>

#include "fuzz_ops.h"

enum op { FREE, MALLOC, REALLOC, HOME, SYNC, FOLD };

struct cmd {
	enum op op;
	struct np_fz_block b;    /* FREE: the block, owned by the worker from now on */
	struct np_fz_block *out; /* MALLOC, REALLOC: the caller's entry */
	size_t n;
	uint64_t seed;
	int node;
};

#define RING 4096 /* commands in flight; the producer waits when it is full */

static struct cmd ring[RING];
static uint64_t pushed, done; /* under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t more = PTHREAD_COND_INITIALIZER, progress = PTHREAD_COND_INITIALIZER;

static void run(struct cmd *c)
{
	switch (c->op) {
	case FREE:
		np_fz_free(&c->b);
		break;
	case MALLOC:
		np_fz_malloc(c->out, c->n, c->seed);
		break;
	case REALLOC:
		np_fz_realloc(c->out, false, 0, c->n, c->seed);
		break;
	case HOME: {
		errno = 0;
		int rc = numa_page_set_home_node(c->node);
		bool ok = c->node == -1 || np_fz_node_valid(c->node);
		NP_FZ_CHECK(ok ? rc == 0 : rc == -1 && errno == EINVAL, "worker: set_home_node(%d) = %d, errno %d", c->node,
			    rc, errno);
		if (ok && c->node >= 0)
			NP_FZ_CHECK(numa_page_home_node() == c->node, "worker: home_node %d after set_home_node(%d)",
				    numa_page_home_node(), c->node);
		break;
	}
	case SYNC:
		break;
	case FOLD: { /* its own slabs and page cache back (only the owner sweeps them), and an
		      * exact read folds the reading thread's own counters */
		int r = numa_page_trim();
		NP_FZ_CHECK(r == 0 || r == 1, "worker: trim() = %d", r);
		np_fz_totals_get();
		break;
	}
	}
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (done == pushed)
			pthread_cond_wait(&more, &lock);
		struct cmd *c = &ring[done % RING]; /* the producer does not reuse it until done moves */
		pthread_mutex_unlock(&lock);
		run(c);
		pthread_mutex_lock(&lock);
		done++;
		pthread_cond_broadcast(&progress);
	}
	return NULL;
}

void np_fz_worker_start(void)
{
	pthread_t t;
	NP_FZ_CHECK(pthread_create(&t, NULL, worker, NULL) == 0, "pthread_create");
	pthread_detach(t);
}

/* Queues c; with wait, returns once it has run. */
static void push(const struct cmd *c, bool wait)
{
	pthread_mutex_lock(&lock);
	while (pushed - done >= RING)
		pthread_cond_wait(&progress, &lock);
	ring[pushed % RING] = *c;
	uint64_t mine = ++pushed;
	pthread_cond_signal(&more);
	while (wait && done < mine)
		pthread_cond_wait(&progress, &lock);
	pthread_mutex_unlock(&lock);
}

void np_fz_worker_free(struct np_fz_block *b)
{
	push(&(struct cmd){.op = FREE, .b = *b}, false);
	*b = (struct np_fz_block){0};
}

void np_fz_worker_malloc(struct np_fz_block *b, size_t n, uint64_t seed)
{
	push(&(struct cmd){.op = MALLOC, .out = b, .n = n, .seed = seed}, true);
}

void np_fz_worker_realloc(struct np_fz_block *b, size_t n, uint64_t seed)
{
	push(&(struct cmd){.op = REALLOC, .out = b, .n = n, .seed = seed}, true);
}

void np_fz_worker_home(int node)
{
	push(&(struct cmd){.op = HOME, .node = node}, true);
}

void np_fz_worker_sync(void)
{
	push(&(struct cmd){.op = SYNC}, true);
}

void np_fz_worker_drain(void)
{
	push(&(struct cmd){.op = FOLD}, true);
}
