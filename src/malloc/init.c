/*
 * init.c — start-up and fork handlers (see init.h). Lock order at fork, outermost first:
 * placement, statistics registry, thread list, orphan lists, node pools, huge caches; released
 * in reverse in the parent
 * and re-created in the child, where only the forking thread survives.
 */
#include "malloc/init.h"

#include <pthread.h>

#include "lock.h"
#include "log.h"
#include "malloc/background.h"
#include "malloc/bootstrap.h"
#include "malloc/cache.h"
#include "malloc/place.h"
#include "malloc/ring.h"
#include "malloc/slab.h"
#include "malloc/thread.h"
#include "node/node.h"
#include "options.h"
#include "os.h"
#include "pool/huge.h"
#include "pool/pool.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

int np_state;
static NP_TLS bool in_init;

#if defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define NP_HAVE_SINGLE_THREADED 1
#endif
#endif

/* Whether fork_prepare took the locks, for fork_parent. */
static bool fork_locked;

/* True while the process has had one thread only (glibc 2.32+ says; elsewhere never). */
static bool single_threaded(void)
{
#ifdef NP_HAVE_SINGLE_THREADED
	return __libc_single_threaded;
#else
	return false;
#endif
}

static void fork_prepare(void)
{
	/* With one thread no other can hold a lock, and that one may be forking from a signal
	 * handler that interrupted it inside the allocator, holding one: fork is
	 * async-signal-safe, and taking the locks hung it (glibc's tst-mallocfork2). Nothing is
	 * taken then, as glibc's fork takes none of its malloc's; the child re-creates them all
	 * the same, and may only call async-signal-safe functions after such a fork. Nor when
	 * this thread holds one (np_lock_depth) beside other threads: the library's background
	 * thread made a one-thread program two, and such a fork hung (fork_in_handler_background). */
	NP_RESET(&fork_locked, !single_threaded() && np_lock_depth == 0); /* mostly the same at every fork */
	if (!fork_locked)
		return;
	np_place_atfork_prepare();
	np_vmstat_atfork_prepare();
	np_thread_atfork_prepare();
	np_slab_atfork_prepare();
	np_pool_atfork_prepare();
	np_huge_atfork_prepare();
	np_bootstrap_atfork_prepare(); /* a leaf: nothing is taken under it */
}

static void fork_parent(void)
{
	if (fork_locked) {
		np_bootstrap_atfork_parent();
		np_huge_atfork_parent();
		np_pool_atfork_parent();
		np_slab_atfork_parent();
		np_thread_atfork_parent();
		np_vmstat_atfork_parent();
		np_place_atfork_parent();
	}
	/* No lock held: the live files of children gone with _exit, every so many forks. */
	np_vmstat_output_atfork_parent();
}

NP_FORK_CHILD static void fork_child(void)
{
	/* What prepare took is re-created below, not released: its count goes too. After a fork
	 * that took none, code a signal handler interrupted releases what it holds, and counts it. */
	if (fork_locked)
		NP_RESET(&np_lock_depth, 0);
	np_lock_forget_all(); /* every lock is re-created below; none is held any more */
	np_options_atfork_child();
	np_bootstrap_atfork_child();
	np_vmstat_atfork_child(np_tls.self ? &np_tls.self->st : NULL);
	np_vmstat_output_atfork_child();
	np_pool_atfork_child();
	np_huge_atfork_child();
	np_slab_atfork_child();
	np_thread_atfork_child();
	np_place_atfork_child();
	np_background_atfork_child();
}

void np_thread_exit_hook(void *arg)
{
	struct np_thread *th = arg;
	if (th != np_tls.self)
		return;
	np_ring_leave(th);
}

/* Before an exact statistics read: the calling thread's byte counts, every slab's too. */
static void fold_self(void)
{
	if (np_tls.self) {
		np_ring_count(np_tls.self, true);
		np_thread_fold_bytes(np_tls.self);
	}
}

void np_init(void)
{
	int expect = NP_STATE_UNINIT;
	if (!__atomic_compare_exchange_n(&np_state, &expect, NP_STATE_INITING, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	in_init = true;
	np_slab_init_secret();
	np_cache_init();
	np_options_init();
	np_topo_load(&np_topo_table, np_opt.topology, NULL);
	np_place_init();
	np_vmstat_init(&np_topo_table);
	np_vmstat_verbose_nodes(&np_topo_table);
	np_vmstat_read_hook = fold_self;
	np_vmstat_fork_hook = np_thread_atfork_count;
	np_pool_init(&np_topo_table);
	np_huge_init(&np_topo_table);
	np_node_init(&np_topo_table);
	np_thread_init_key(np_thread_exit_hook);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	__atomic_store_n(&np_state, NP_STATE_READY, __ATOMIC_RELEASE);
	/* numa_page_option_set turning NUMAPAGE_BACKGROUND_THREAD on starts the thread then. */
	__atomic_store_n(&np_options_set_hook, np_background_option_set, __ATOMIC_RELEASE);
	in_init = false;
	size_t boot_bytes = np_bootstrap_release();
	np_vmstat_start_output();
	np_verbose("ready: %d node(s) from %s, %d with memory", np_topo_table.nnodes, np_topo_table.desc,
		   np_topo_table.nmem_nodes);
	np_verbose("start-up allocator: %zu KiB given back", boot_bytes >> 10);
	np_node_policy_verbose();
}

bool np_init_for_malloc(void)
{
	if (NP_LIKELY(np_is_ready()))
		return true;
	if (in_init)
		return false;
	np_init();
	return np_is_ready();
}

bool np_ensure_ready(void)
{
	if (NP_LIKELY(np_is_ready()))
		return true;
	if (in_init)
		return false;
	np_init();
	while (!np_is_ready())
		np_os_yield();
	return true;
}
