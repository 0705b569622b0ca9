/*
 * fuzz_query.h — calls of the fuzz target that hold no block: the statistics readers, and
 * the edge cases of the API (NULL arguments, memory that is not the library's, counter names
 * out of range, the topology queries, the version).
 */
#ifndef NP_FUZZ_QUERY_H
#define NP_FUZZ_QUERY_H

/* Reads node's counters. how 0: exact, after the worker folded its own (only then is an exact
 * read exact: events never go back, gauges never below 0); 1: the cheap reader; 2: a NULL out,
 * which must fail with EINVAL. An unknown node must fail with EINVAL. */
void np_fz_stats(int node, unsigned how);
/* One of 8 calls whose contract needs no live block. */
void np_fz_edge(unsigned which);

#endif /* NP_FUZZ_QUERY_H */
