/*
 * node.h — every decision of which node serves a request (layer 5: above the pools, whose free
 * pages it reads, below the page caches and malloc, which ask it). It owns:
 *   - the first-choice pool of each node: its own when it has memory; for a memoryless node
 *     whose nearest memory nodes are equidistant, one of them, dealt in turn to the memoryless
 *     nodes of the group so that their threads do not all start on one pool;
 *   - stealing within that group: a first choice whose free pages per CPU served fall below
 *     the average over all pools gives way to a group member above it, taken in turn by the
 *     caller's rotating iterator (DragonFly BSD's fix for the 2990WX);
 *   - the nodes whose pages count as local for a home node (itself, or a memoryless node's
 *     equidistant nearest group);
 *   - the order a request walks when its first choice has nothing (np_node_walk), the one
 *     fallback walk of the library.
 * Written once by np_node_init after the pools; read without a lock afterwards.
 */
#ifndef NP_NODE_H
#define NP_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "topology/topology.h"

/* Once, after np_pool_init: first choices, groups, and the CPUs each pool serves. */
void np_node_init(const struct np_topo *t);

/* The first-choice pool of threads homed on dense node `node`. */
int np_node_primary(int node);
/* Allowed CPUs whose first choice is pool `node` (0 for a node without a pool). */
size_t np_node_cpus_served(int node);
/* The pool a thread homed on `home` should take from now: its first choice, or a fuller member
 * of its equidistant group (*stolen set then; the caller counts pages_stolen). *rotor is the
 * caller's rotating iterator. Racy reads of the pools' free pages: a hint, never a lock. */
int np_node_pick(int home, unsigned *rotor, bool *stolen);
/* Dense nodes whose pages count as local for a thread homed on `home`, one bit per node. */
uint64_t np_node_near(int home);
/* Free pages a thread homed on `node` can get without going far: its first choice's free pages
 * plus what that pool may still map before it reaches the node's size. */
size_t np_node_free_nearby(int node);

/* One try of a walk: serve from dense node `node` (stolen: it was picked over the first
 * choice); true when it did. */
typedef bool (*np_node_try_fn)(int node, bool stolen, void *arg);

enum np_node_walk_flags {
	NP_WALK_PICK = 1,      /* try np_node_pick(intended) first (requests for the home node) */
	NP_WALK_NEAR_ONLY = 2, /* only nodes near the intended one (np_node_near) */
};

/* Tries, for a request intended for dense node `intended`, each allowed node with memory in
 * order until try() succeeds: the picked pool first with NP_WALK_PICK, then the intended
 * node's fallback order (nearest first; each node once). Returns the node that served, or -1
 * when none did. rotor: the caller's iterator for NP_WALK_PICK (may be NULL without it). */
int np_node_walk(int intended, unsigned flags, unsigned *rotor, np_node_try_fn try, void *arg);

#endif /* NP_NODE_H */
