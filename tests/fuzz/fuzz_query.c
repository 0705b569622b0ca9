/*
 * fuzz_query.c — the calls of fuzz_query.h. Only the main thread calls them; `prev` keeps
 * the previous exact reading of each node, against which events must not go back.
 */
#include "fuzz_query.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_ops.h"
#include "fuzz_worker.h"

static struct numa_page_node_stats prev[NP_FZ_MAX_NODES];

/* Events never go back; gauges are never below 0. The kinds of NUMA_PAGE_STAT_ITEMS: */
#define IS_EVENT_EVENT 1
#define IS_EVENT_BYTE_EVENT 1
#define IS_EVENT_GAUGE 0
#define IS_EVENT_BYTE_GAUGE 0
#define IS_EVENT_COUNT_EVENT 1
#define IS_EVENT_COUNT_GAUGE 0

static void check_item(const char *name, bool event, uint64_t now, uint64_t last)
{
	if (event)
		NP_FZ_CHECK(now >= last, "exact %s went back from %llu to %llu", name, (unsigned long long)last,
			    (unsigned long long)now);
	else
		NP_FZ_CHECK((int64_t)now >= 0, "exact gauge %s is %lld", name, (long long)now);
}

void np_fz_stats(int node, unsigned how)
{
	struct numa_page_node_stats s;
	errno = 0;
	if (how == 2) {
		int rc = numa_page_stats_get(node, NULL);
		NP_FZ_CHECK(rc == -1 && errno == EINVAL, "stats_get(%d, NULL) = %d, errno %d", node, rc, errno);
		return;
	}
	if (how == 0) /* the worker's fast-path bytes live in its TLS until it folds them */
		np_fz_worker_drain();
	int rc = how == 0 ? numa_page_stats_get(node, &s) : numa_page_stats_get_cheap(node, &s);
	if (!np_fz_node_valid(node)) {
		NP_FZ_CHECK(rc == -1 && errno == EINVAL, "stats_get(%d) = %d, errno %d", node, rc, errno);
		return;
	}
	NP_FZ_CHECK(rc == 0 && s.node == node, "stats_get(%d) = %d, node %d", node, rc, s.node);
	if (how != 0)
		return;
	struct numa_page_node_stats *l = &prev[node];
#define CHECK_ITEM_(name, kind, desc) check_item(#name, IS_EVENT_##kind, s.name, l->name);
	NUMA_PAGE_STAT_ITEMS(CHECK_ITEM_)
#undef CHECK_ITEM_
	*l = s;
}

void np_fz_edge(unsigned which)
{
	int local = 0;
	errno = 0x4e50;
	switch (which % 8) {
	case 0:
		numa_page_free(NULL);
		NP_FZ_CHECK(errno == 0x4e50, "free(NULL) changed errno to %d", errno);
		break;
	case 1:
		NP_FZ_CHECK(numa_page_usable_size(NULL) == 0, "usable_size(NULL)");
		break;
	case 2: {
		/* NULL, the stack and the sanitizer's heap are not this library's memory. */
		void *m = malloc(64);
		const void *p[] = {NULL, &local, m, (const char *)m + 63};
		for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) {
			errno = 0;
			int node = numa_page_node_of(p[i]);
			NP_FZ_CHECK(node == -1 && errno == EINVAL, "node_of(%p) = %d, errno %d", p[i], node, errno);
		}
		free(m);
		break;
	}
	case 3:
		for (int i = -1; i <= NUMA_PAGE_STAT_NITEMS; i++) {
			bool in_range = i >= 0 && i < NUMA_PAGE_STAT_NITEMS;
			NP_FZ_CHECK((numa_page_stat_name(i) != NULL) == in_range, "stat_name(%d)", i);
			NP_FZ_CHECK((numa_page_stat_desc(i) != NULL) == in_range, "stat_desc(%d)", i);
		}
		break;
	case 4: {
		int rc = numa_page_stats_get_cheap(np_fz_topo.id[0], NULL);
		NP_FZ_CHECK(rc == -1 && errno == EINVAL, "stats_get_cheap(%d, NULL) = %d", np_fz_topo.id[0], rc);
		break;
	}
	case 5:
		NP_FZ_CHECK(numa_page_node_count() == np_fz_topo.nvalid, "node_count() = %d", numa_page_node_count());
		NP_FZ_CHECK(numa_page_max_node() == np_fz_topo.max_node, "max_node() = %d", numa_page_max_node());
		break;
	case 6: {
		char want[32];
		snprintf(want, sizeof want, "%d.%d.%d", NUMA_PAGE_VERSION_MAJOR, NUMA_PAGE_VERSION_MINOR,
			 NUMA_PAGE_VERSION_PATCH);
		NP_FZ_CHECK(strcmp(numa_page_version(), want) == 0, "version %s, header %s", numa_page_version(), want);
		break;
	}
	default: {
		/* malloc(0) and realloc(NULL, 0): distinct live blocks. */
		void *a = numa_page_malloc(0), *b = numa_page_realloc(NULL, 0);
		NP_FZ_CHECK(a && b && a != b, "malloc(0) = %p, realloc(NULL, 0) = %p", a, b);
		numa_page_free(a);
		numa_page_free(b);
	}
	}
}
