/*
 * fuzz_ops.h — every public call the fuzz target makes, each wrapped with the contract it must
 * keep: what it returns and what errno says for the arguments given, alignment, node, content
 * (filled on allocation, verified before free and realloc, the prefix kept by realloc), zeroes
 * from calloc, usable sizes. Any thread may call them on blocks it holds; the topology facts
 * are written once by np_fz_topo_load before the first input and only read after.
 */
#ifndef NP_FUZZ_OPS_H
#define NP_FUZZ_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz_block.h"

#define NP_FZ_MAX_NODES 64

/* Requests at or above 2^47 bytes (or alignment) cannot be met in a 47-bit user address space:
 * they must fail with ENOMEM. The fuzz target makes no request between its live-bytes cap and
 * this, whose outcome would depend on the machine. */
#define NP_FZ_IMPOSSIBLE ((size_t)1 << 47)
/* Requests up to this (size and alignment each) must succeed: the target's live-bytes cap
 * keeps it far below the memory of any node of the rehearsal topologies. Larger alignments
 * may fail with ENOMEM (they reserve that much address space). */
#define NP_FZ_SURE ((size_t)64 << 20)

struct np_fz_topo {
	int max_node;                   /* numa_page_max_node() */
	int nvalid;                     /* nodes that exist, ids in id[] */
	int id[NP_FZ_MAX_NODES];
	bool valid[NP_FZ_MAX_NODES];    /* numa_page_stats_get(n) == 0 */
	bool mem[NP_FZ_MAX_NODES];      /* a page asked of it is served by it */
};
extern struct np_fz_topo np_fz_topo;

/* NP_FUZZ_TRACE=1: each instruction and what each call returned, on stderr (to read a crash). */
extern bool np_fz_trace;
#define NP_FZ_TRACE(...)                                      \
	do {                                                  \
		if (np_fz_trace)                              \
			fprintf(stderr, "fuzz_api: " __VA_ARGS__); \
	} while (0)

/* Learns the nodes, which have memory, and checks the topology queries agree. */
void np_fz_topo_load(void);
bool np_fz_node_valid(int node);
bool np_fz_node_mem(int node); /* valid, and has memory */

/* The malloc family. Each fills a fresh block with seed's pattern; b must be empty (except
 * np_fz_realloc, where an empty b means realloc(NULL, n)). */
void np_fz_malloc(struct np_fz_block *b, size_t n, uint64_t seed);
void np_fz_calloc(struct np_fz_block *b, size_t nmemb, size_t size, uint64_t seed);
enum np_fz_aligned_call { NP_FZ_POSIX_MEMALIGN, NP_FZ_ALIGNED_ALLOC, NP_FZ_MEMALIGN };
void np_fz_aligned(struct np_fz_block *b, enum np_fz_aligned_call call, size_t align, size_t n, uint64_t seed);
/* numa_page_realloc(p, size), or with array numa_page_reallocarray(p, nmemb, size). */
void np_fz_realloc(struct np_fz_block *b, bool array, size_t nmemb, size_t size, uint64_t seed);
/* The page API. node: NP_FZ_HOME for numa_page_alloc (want_node: where it must land, -1 for
 * any node with memory), else numa_page_alloc_onnode(n, node) with any node id. */
#define NP_FZ_HOME INT32_MIN
void np_fz_pages(struct np_fz_block *b, size_t n, int node, int want_node, uint64_t seed);
void np_fz_interleaved(struct np_fz_block *b, size_t n, uint64_t seed);

/* Verifies and frees b (any kind); b becomes empty. */
void np_fz_free(struct np_fz_block *b);
/* The program writes zeros over b's first 8 bytes (a block of at least 8). */
void np_fz_zero_head(struct np_fz_block *b);
/* usable_size: at least the pattern's bytes; the pattern then covers them all. */
void np_fz_usable(struct np_fz_block *b);
/* node_of at offset off (< size, or 0) of b: the node b was given, or a node with memory. */
void np_fz_node_of(const struct np_fz_block *b, size_t off);
/* node_of of an arbitrary address (near our memory or not): -1 with EINVAL, or a node. Only
 * while no other thread frees (an address inside memory being unmapped is the caller's race). */
void np_fz_node_probe(const void *p);

/* Exact statistics summed over the nodes (gauges as signed sums). */
struct np_fz_totals {
	int64_t malloc_in_use, pages_in_use, threads;
};
struct np_fz_totals np_fz_totals_get(void);

#endif /* NP_FUZZ_OPS_H */
