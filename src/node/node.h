/*
 * node.h — every decision of which node serves a request (layer 6: above the pools, whose free
 * pages it reads, below the page caches and malloc, which ask it). It owns:
 *   - the first-choice pool of each node: its own when it has memory; for a memoryless node
 *     whose nearest memory nodes are equidistant, one of them, dealt in turn to the memoryless
 *     nodes of the group (the pool whose CPUs it counts, np_node_cpus_served);
 *   - sharing within that group: a thread of a memoryless node takes each batch from the next
 *     member of its group that has room, in turn, so its pages and its lock traffic split
 *     evenly over the group (DragonFly BSD's fix for the 2990WX, made exact: see node.c);
 *   - the task memory policy a thread follows (numactl --preferred, --interleave) and the
 *     node its memory is intended for under it;
 *   - how much room each node has left (np_node_has_room): the walk passes over a node that
 *     is nearly full before the kernel has to put our pages elsewhere;
 *   - the nodes whose pages count as local (itself, or a memoryless node's equidistant group);
 *   - the order a request walks when its first choice has nothing (np_node_walk), the one
 *     fallback walk of the library.
 * The tables are written once by np_node_init after the pools and read without a lock; the
 * room estimates are racy hints (relaxed atomics), never a lock.
 */
#ifndef NP_NODE_H
#define NP_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "topology/topology.h"

/* Once, after np_pool_init: first choices, groups, the CPUs each pool serves, room. */
void np_node_init(const struct np_topo *t);

/* The first-choice pool of threads homed on dense node `node`. */
int np_node_primary(int node);
/* Allowed CPUs whose first choice is pool `node` (0 for a node without a pool). */
size_t np_node_cpus_served(int node);
/* The pool a thread homed on `home` should take its next batch of `pages` from: its own for a
 * memory node; for a memoryless node the next member of its equidistant group that has room,
 * in turn, from its first choice on (*rotor: the caller's count of picks, from 0; *shared set
 * when it is not the first choice: the caller counts pages_stolen). */
int np_node_pick(int home, unsigned *rotor, size_t pages, bool *shared);
/* Dense nodes whose pages count as local for a thread homed on `home`, one bit per node. */
uint64_t np_node_near(int home);
/* Free pages a thread homed on `node` can get without going far: its first choice's free pages
 * plus what that pool may still map before it reaches the node's size. */
size_t np_node_free_nearby(int node);

/* ---- Task memory policy ---------------------------------------------------------------- */

/* The policy a thread that starts now follows: its memory policy (np_topo_read_policy),
 * unless NUMAPAGE_BIND was given (NUMAPAGE_CONF, the environment, numa_page_option_set): then
 * the library's own placement, bound as the option says. */
void np_node_policy(struct np_topo_policy *pol);
/* With NUMAPAGE_VERBOSE: which policy the calling thread follows, and why. */
void np_node_policy_verbose(void);
/* The node a thread homed on `home` allocates for: home; under PREFERRED the policy's node
 * nearest home (ties: lowest id); under INTERLEAVE the node of its next batch, from *rotor. */
int np_node_target(const struct np_topo_policy *pol, int home, unsigned *rotor);
/* The nodes whose pages are as good as the target's: np_node_near(target), or every node of
 * the policy under INTERLEAVE. */
uint64_t np_node_target_near(const struct np_topo_policy *pol, int target);
/* True when a page of dense node `node` served under pol is where the policy wanted it: a node
 * of an interleave (counted numa_hit and interleave_hit there). */
NP_INLINE bool np_node_interleaves(const struct np_topo_policy *pol, int node)
{
	return pol && pol->mode == NP_POLICY_INTERLEAVE && ((pol->nodes >> node) & 1);
}
/* The nodes an interleave spreads over (0: pol is no interleave): np_node_req.prefer, so that a
 * full one is passed over to the next of them before any other node. */
NP_INLINE uint64_t np_node_interleave_set(const struct np_topo_policy *pol)
{
	return pol->mode == NP_POLICY_INTERLEAVE ? pol->nodes : 0;
}

/* ---- Room ------------------------------------------------------------------------------ */

/* Whether dense node `node` has memory for `pages` more pages of fresh memory (a new chunk's,
 * a huge block's) without the kernel taking memory elsewhere: the node's memory, less a
 * reserve. On this machine the node's available memory (np_os_node_avail) is read again after
 * the library's own use of the node (pages_in_use) has eaten an eighth of what was left, and
 * at most every 64 questions while the node is full; in a rehearsal the node's memory is its
 * size in the fixture and pages_in_use is what it holds. */
bool np_node_has_room(int node, size_t pages);
/* Whether the node can serve `pages` at all: its pool's free pages cover them, or it has room;
 * in a rehearsal only room counts (its pool grows past the fixture's size a chunk at a time). */
bool np_node_can_serve(int node, size_t pages);
/* The kernel put a chunk's pages for `node` elsewhere (np_pool_note_spill): full until read
 * again. */
void np_node_note_full(int node);

/* ---- The walk -------------------------------------------------------------------------- */

/* One try of a walk: serve from dense node `node` (shared: it was picked over the first
 * choice); grow: fresh memory may be taken there (new chunks: the node has room, or no node
 * had); else only what its pool holds. True when it did. */
typedef bool (*np_node_try_fn)(int node, bool shared, bool grow, void *arg);

enum np_node_walk_flags {
	NP_WALK_PICK = 1,      /* try np_node_pick(intended) first (requests for the home node) */
	NP_WALK_ROOM_ONLY = 2, /* no second round: the caller has something else to fall back on */
};

struct np_node_req {
	int intended;     /* dense node the request is for */
	unsigned flags;   /* enum np_node_walk_flags */
	uint64_t only;    /* nonzero: only these nodes may serve */
	uint64_t prefer;  /* nonzero: these nodes (an interleave's set) before the others, in
			   * each round, both in the intended node's fallback order */
	size_t pages;     /* pages it needs: nodes without room for them are tried last */
	unsigned *rotor;  /* the caller's iterator for NP_WALK_PICK (may be NULL without it) */
};

/* Tries, for request r, each allowed node with memory in order until try() succeeds: the
 * picked pool first with NP_WALK_PICK, then the intended node's fallback order (nearest
 * first; the preferred nodes of that order before the rest). A node without room
 * (np_node_has_room) is tried without growing (what its pool holds; in a rehearsal not at
 * all, see np_node_can_serve), and again with growing in a second round, in the same order,
 * only when no node served in the first: fresh memory comes from a full node (where the
 * kernel reclaims, swaps or spills) only when every allowed node is full. Returns the node
 * that served, or -1. */
int np_node_walk(const struct np_node_req *r, np_node_try_fn try, void *arg);

#endif /* NP_NODE_H */
