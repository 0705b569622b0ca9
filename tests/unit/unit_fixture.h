/*
 * unit_fixture.h — loads a fixture topology as the library's table, with fresh statistics,
 * fake OS and pools, for the unit tests of the layers that sit on a topology (pool, pcp).
 * Include after <cmocka.h>.
 */
#ifndef NP_UNIT_FIXTURE_H
#define NP_UNIT_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_os.h"
#include "lock.h"
#include "node/node.h"
#include "options.h"
#include "os.h"
#include "pool/pool.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

/* Loads a topology as np_topo_load takes it (an XML path, "synthetic:<string>"), restricted
 * by allow (or NULL), as the library's table, with fresh statistics, fake OS, pools and node
 * state; options as they are. */
static inline void np_test_load_topology(const char *spec, const struct np_topo_allow *allow)
{
	assert_int_equal(np_topo_load(&np_topo_table, spec, allow), 0);
	np_vmstat_init(&np_topo_table);
	np_vmstat_reset();
	np_fake_os_reset();
	np_pool_init(&np_topo_table);
	np_node_init(&np_topo_table);
}

/* The same for a fixture of tests/topologies. */
static inline void np_test_load_fixture(const char *fixture, const struct np_topo_allow *allow)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s.xml", NP_TOPOLOGIES, fixture);
	np_test_load_topology(path, allow);
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

/* Loads a fixture as the library's table, fresh pools and statistics; option pairs name,
 * value (NULL-terminated) are applied first. */
static inline void np_test_start(const char *fixture, ...)
{
	va_list ap;
	va_start(ap, fixture);
	np_test_start_fixture(fixture, ap);
	va_end(ap);
}

/* Unmaps every normal chunk of every pool (tests leave whole pools behind). */
static inline void np_test_unmap_pools(void)
{
	/* The pools of the test's table only: those past it were never touched, and stay so
	 * (test_pool pools_past_the_tables_stay_untouched). */
	for (int i = 0; i < np_topo_table.nnodes; i++)
		for (unsigned k = 0; k < np_pools[i].shards_used; k++) {
			struct np_chunk *c = np_pools[i].shard[k].chunks, *next;
			for (; c; c = next) {
				next = c->next;
				np_chunk_unmap(c);
			}
			np_pools[i].shard[k].chunks = NULL;
			np_pools[i].shard[k].mapped_pages = 0;
		}
}

/* A cmocka teardown for the tests that use pools only: unmaps them, resets the fake OS. */
static inline int np_test_teardown_pools(void **state)
{
	(void)state;
	np_test_unmap_pools();
	np_fake_os_reset();
	return 0;
}

/* Forks as the library's fork handlers would for one module: prepare() before, parent() after
 * in the parent; in the child the lock checker forgets every held lock (as the library's
 * handler does first), child() runs, then measure() fills len bytes, which the child sends back
 * into out through a pipe before it exits. The child must exit 0. */
static inline void np_test_fork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
				void (*measure)(void *out), void *out, size_t len)
{
	prepare();
	int fd[2];
	assert_int_equal(pipe(fd), 0);
	pid_t pid = fork();
	if (pid == 0) {
		np_lock_forget_all();
		child();
		char buf[256];
		if (len > sizeof buf)
			_exit(2);
		measure(buf);
		_exit(write(fd[1], buf, len) == (ssize_t)len ? 0 : 1);
	}
	parent();
	assert_int_equal(read(fd[0], out, len), (ssize_t)len);
	close(fd[0]);
	close(fd[1]);
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#endif
