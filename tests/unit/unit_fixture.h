/*
 * unit_fixture.h — loads a fixture topology as the library's table, with fresh statistics,
 * fake OS and pools, for the unit tests of the layers that sit on a topology (pool, pcp).
 * Include after <cmocka.h>.
 */
#ifndef NP_UNIT_FIXTURE_H
#define NP_UNIT_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>

#include "fake_os.h"
#include "node/node.h"
#include "options.h"
#include "os.h"
#include "pool/pool.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

/* Loads fixture (restricted by allow, or NULL) as the library's table, with fresh statistics,
 * fake OS, pools and node state; options as they are. */
static inline void np_test_load_fixture(const char *fixture, const struct np_topo_allow *allow)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s.xml", NP_TOPOLOGIES, fixture);
	assert_int_equal(np_topo_load(&np_topo_table, path, allow), 0);
	np_vmstat_init(&np_topo_table);
	np_vmstat_reset();
	np_fake_os_reset();
	np_pool_init(&np_topo_table);
	np_node_init(&np_topo_table);
}

/* Option pairs name, value from ap (NULL-terminated) are applied first. */
static inline void np_test_start_fixture(const char *fixture, va_list ap)
{
	np_options_reset();
	const char *name;
	while ((name = va_arg(ap, const char *)) != NULL)
		assert_int_equal(np_options_set(name, va_arg(ap, const char *)), 0);
	np_test_load_fixture(fixture, NULL);
}

static inline void np_test_start_fixture_opts(const char *fixture, ...)
{
	va_list ap;
	va_start(ap, fixture);
	np_test_start_fixture(fixture, ap);
	va_end(ap);
}

/* Unmaps every normal chunk of every pool (tests leave whole pools behind). */
static inline void np_test_unmap_pools(void)
{
	for (int i = 0; i < NP_MAX_NODES; i++)
		for (int k = 0; k < NP_POOL_SHARDS; k++) {
			struct np_chunk *c = np_pools[i].shard[k].chunks, *next;
			for (; c; c = next) {
				next = c->next;
				np_granule_map[(uintptr_t)c >> NP_CHUNK_SHIFT] = NP_GRANULE_NONE;
				np_os_unmap(c, NP_CHUNK_SIZE);
			}
			np_pools[i].shard[k].chunks = NULL;
		}
}

#endif
