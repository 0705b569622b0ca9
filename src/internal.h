/*
 * internal.h — what every module of libnumapage shares: compiler helpers, build-time
 * configuration as constants (so every configuration is compiled and type-checked), assertions
 * by debug level, and fatal error reporting. Lowest layer: includes nothing of the project but
 * the public header.
 */
#ifndef NP_INTERNAL_H
#define NP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "numapage.h"

#define NP_LIKELY(x) __builtin_expect(!!(x), 1)
#define NP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define NP_NOINLINE __attribute__((noinline))
#define NP_INLINE static inline __attribute__((always_inline))
#define NP_COLD __attribute__((cold))
/* On the functions a fork's child runs in its handlers: placed with the cold code, at the start
 * of the text, where the child's first malloc runs too. fork copies no page table entry of a
 * file mapping: each 64 KiB window of the library's text a child runs is a page fault, and the
 * handlers lay in three (docs/perf-issue15.md section 45). */
#define NP_FORK_CHILD NP_COLD
/* *p = v, unless *p is v already (relaxed): for a fork child's handlers, where a write copies
 * the page, and most of what they reset is reset already (docs/perf-issue15.md section 44). */
#define NP_RESET(p, v)                                                                             \
	do {                                                                                       \
		if (__atomic_load_n((p), __ATOMIC_RELAXED) != (v))                                 \
			__atomic_store_n((p), (v), __ATOMIC_RELAXED);                              \
	} while (0)
#define NP_NORETURN __attribute__((noreturn))
#define NP_UNUSED __attribute__((unused))
#define NP_TLS __thread __attribute__((tls_model("initial-exec")))
/* On declarations of the library's own globals that fast paths read: the compiler then
 * addresses them RIP-relative, without a GOT entry (-fvisibility=hidden covers definitions
 * only). */
#define NP_HIDDEN __attribute__((visibility("hidden")))
#define NP_CACHELINE 64
/* Fetches the line at p for writing (exclusive), so that a write or an atomic read-modify-write
 * soon after does not wait for it and then for its ownership. On x86-64 PREFETCHW, which CPUs
 * without it (Intel before Broadwell) execute as a no-op; GCC emits it for __builtin_prefetch
 * only when built for such CPUs (-mprfchw), so it is written out, with p in a register: any
 * address may be prefetched (NULL included), and a memory operand would tell the compiler p
 * is dereferenced. */
#if defined(__x86_64__)
#define NP_PREFETCH_WRITE(p) __asm__ volatile("prefetchw (%0)" : : "r"((const void *)(p)))
#else
#define NP_PREFETCH_WRITE(p) __builtin_prefetch((p), 1)
#endif
#define NP_ALIGNED(n) __attribute__((aligned(n)))
/* 1 in a ThreadSanitizer build (gcc defines __SANITIZE_THREAD__; clang has the feature): it
 * does not model atomic_thread_fence, so where the code orders by a fence, such a build orders
 * by the atomic operation itself instead. */
#if defined(__SANITIZE_THREAD__)
#define NP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define NP_TSAN 1
#endif
#endif
#ifndef NP_TSAN
#define NP_TSAN 0
#endif
/* On the library's large zero-initialised tables (4 KiB and more: sized for NP_MAX_NODES nodes
 * or NP_MAX_CPUS CPUs, buffers, the granule map): they go after every other zero-initialised
 * variable, so the small variables share two pages instead of each sitting beside a large
 * table on a page of its own. A page start-up touches is resident (start-up RSS:
 * docs/perf-issue15.md section 15). The name is one that GCC and clang both make NOBITS
 * (".lbss" is PROGBITS under clang 14: megabytes of zeros in the file) and that the linker
 * scripts of x86-64 do not name, so the linker places it, as an orphan, after .bss
 * (tests/install/check_bss.py holds the layout). */
#define NP_LARGE_BSS __attribute__((section(".sbss.np_large")))
#define NP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NP_MIN(a, b) ((a) < (b) ? (a) : (b))
/* x is a power of two (0 is not). */
NP_INLINE bool np_is_power_of_two(size_t x)
{
	return x && !(x & (x - 1));
}
#define NP_MAX(a, b) ((a) > (b) ? (a) : (b))
/* A 64-bit mixer (MurmurHash3's finaliser): every input bit moves about half the output
 * bits. For keys made from addresses and secrets, and for stretching a seed. */
NP_INLINE uint64_t np_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

/* Largest number of NUMA nodes the library handles; a machine with more is folded onto one
 * node with a warning (the topology module says so). */
#define NP_MAX_NODES 64

#ifndef NP_DEBUG_LEVEL
#define NP_DEBUG_LEVEL 0
#endif
/* Build switches as constants: use `if (np_config_debug >= 2)`, never #ifdef. */
static const int np_config_debug NP_UNUSED = NP_DEBUG_LEVEL;

/* Reports "numapage: <what>" on stderr without allocating, then aborts. */
NP_NORETURN NP_COLD void np_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define np_assert_level_(level, cond)                                                          \
	do {                                                                                   \
		if (np_config_debug >= (level) && NP_UNLIKELY(!(cond)))                         \
			np_fatal("assertion failed: %s (%s:%d)", #cond, __FILE__, __LINE__);      \
	} while (0)
#define np_assert(cond) np_assert_level_(1, cond)
#define np_assert_internal(cond) np_assert_level_(2, cond)
#define np_assert_expensive(cond) np_assert_level_(3, cond)

#endif /* NP_INTERNAL_H */
