/*
 * misuse_malloc.c — programs that misuse free() and must be stopped by libnumapage's cheap
 * always-on checks: each case (argv[1]) makes one mistake and must abort with
 * "numapage: <call>: <reason> <ptr>" before returning. Returning 0 means the mistake went
 * unnoticed (the test fails). Uses the libc names where libnumapage exports them
 * (-DMISUSE_LIBC), else the numa_page_* names (sanitizer builds).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "numapage.h"

#ifdef MISUSE_LIBC
#include <malloc.h>
#define M_MALLOC malloc
#define M_FREE free
#define M_USABLE malloc_usable_size
#define M_REALLOC realloc
#define M_FREE_SIZED free_sized
#define M_FREE_ALIGNED_SIZED free_aligned_sized
/* C23's: recent glibc's stdlib.h declares them, Debian 12's does not. */
void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t alignment, size_t size);
#else
#define M_MALLOC numa_page_malloc
#define M_FREE numa_page_free
#define M_USABLE numa_page_usable_size
#define M_REALLOC numa_page_realloc
#define M_FREE_SIZED numa_page_free_sized
#define M_FREE_ALIGNED_SIZED numa_page_free_aligned_sized
#endif

/* p, opaque to the compiler: it must not see (or warn about) the mistake it cannot prove. */
static void *launder(void *p)
{
	__asm__ volatile("" : "+r"(p));
	return p;
}

/* A live block, so the slab has neighbours and the misuse is not at a list end. */
static char *live_block(size_t n)
{
	char *p = M_MALLOC(n);
	if (!p || numa_page_node_of(p) < 0) {
		fprintf(stderr, "setup: %zu-byte block is not libnumapage's\n", n);
		exit(3);
	}
	memset(p, 0x11, n);
	return p;
}

static void *free_twice(void *arg)
{
	M_FREE(arg);
	M_FREE(launder(arg));
	return NULL;
}

static void *free_once(void *arg)
{
	M_FREE(launder(arg));
	return NULL;
}

/* Frees the block, writes its first word as a program's `n->next = NULL` after free(n) does,
 * and frees it again. */
static void *free_write_free(void *arg)
{
	M_FREE(arg);
	*(void *volatile *)launder(arg) = NULL;
	M_FREE(launder(arg));
	return NULL;
}

/* free_write_free on blocks[1] after blocks[0] was freed: the block freed twice is not the
 * first of the owner's remote list. */
static void *free_other_then_write_twice(void *arg)
{
	char **blocks = arg;
	M_FREE(blocks[0]);
	free_write_free(blocks[1]);
	return NULL;
}

/* blocks[0] and blocks[1] freed, then blocks[0] written over as after free and freed again: the
 * block freed twice is the oldest of the owner's remote list (its tail), not its newest. */
static void *free_two_then_write_first_twice(void *arg)
{
	char **blocks = arg;
	M_FREE(blocks[0]);
	M_FREE(blocks[1]);
	memset(launder(blocks[0]), 0, 16);
	M_FREE(launder(blocks[0]));
	return NULL;
}

/* A thread that frees its argument and then stays alive (it waits for good): the second free
 * comes while the freeing thread's state is live, so nothing its exit does (what it hands
 * over, flushes or folds) is what catches it. The thread makes its state and is homed on the
 * block's node first, so its free takes the common remote path, not the one for a thread
 * without state. */
static pthread_barrier_t held;
static void *free_and_stay(void *arg)
{
	if (!M_MALLOC(1000) || numa_page_set_home_node(numa_page_node_of(arg)) != 0)
		exit(3);
	M_FREE(launder(arg));
	pthread_barrier_wait(&held);
	for (;;)
		pause();
	return NULL;
}

static void free_in_living_thread(void *p)
{
	pthread_t t;
	if (pthread_barrier_init(&held, NULL, 2) || pthread_create(&t, NULL, free_and_stay, p))
		exit(3);
	pthread_barrier_wait(&held);
}

/* Makes blocks[1..7] (80 bytes) on the node of blocks[0], and exits with them live: their slab
 * becomes an orphan of that node, which the exit tags as its own. */
static void *alloc_and_exit(void *arg)
{
	char **blocks = arg;
	if (numa_page_set_home_node(numa_page_node_of(blocks[0])) != 0)
		exit(3);
	for (int i = 1; i < 8; i++)
		blocks[i] = live_block(80);
	return NULL;
}

/* Runs fn(arg) in a thread of its own and waits for it. */
static void *realloc_in_thread(void *arg)
{
	printf("%p\n", M_REALLOC(launder(arg), 72));
	return NULL;
}

static void in_thread(void *(*fn)(void *), void *arg)
{
	pthread_t t;
	if (pthread_create(&t, NULL, fn, arg) || pthread_join(t, NULL))
		exit(3);
}

/* Two 80-byte blocks among 16 live ones of their slab, handed to fn in a thread of its own;
 * then the owner's mallocs of the class, whose slow paths collect what fn freed. */
static void double_free_among_live(void *(*fn)(void *))
{
	char *live[16], *two[2] = {live_block(80), live_block(80)};
	for (int i = 0; i < 16; i++)
		live[i] = live_block(80);
	in_thread(fn, two);
	for (int i = 0; i < 100000; i++)
		live_block(80);
	(void)live;
}

/* Frees p in a thread of its own (a thread that does not own p's slab). */
static void free_in_thread(void *p)
{
	pthread_t t;
	if (pthread_create(&t, NULL, free_once, p) || pthread_join(t, NULL))
		exit(3);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CASE\n", argv[0]);
		return 2;
	}
	const char *c = argv[1];
	char *keep[4];
	for (int i = 0; i < 4; i++)
		keep[i] = live_block(64);
	fflush(stdout);

	if (!strcmp(c, "free_stack")) {
		char buf[64];
		memset(buf, 1, sizeof buf);
		M_FREE(launder(buf));
	} else if (!strcmp(c, "free_interior")) {
		char *p = live_block(64);
		M_FREE(launder(p + 16));
	} else if (!strcmp(c, "free_interior_large")) {
		char *p = live_block(1 << 20);
		M_FREE(launder(p + 4096));
	} else if (!strcmp(c, "double_free_small")) {
		char *p = live_block(48);
		M_FREE(p);
		M_FREE(launder(p));
	} else if (!strcmp(c, "double_free_small_busy")) {
		/* The second free comes after other frees and mallocs of the class. */
		char *p = live_block(48), *q = live_block(48);
		M_FREE(p);
		M_FREE(q);
		char *r = live_block(48);
		(void)r;
		M_FREE(launder(p));
	} else if (!strcmp(c, "double_free_cached")) {
		/* Above 2 KiB the first free puts the block on the thread's cache. */
		char *p = live_block(3000);
		M_FREE(p);
		M_FREE(launder(p));
	} else if (!strcmp(c, "double_free_cached_past_first_step")) {
		/* A block past the first 128 KiB step of its 256 KiB slab (the 20,480-byte class:
		 * block 7 starts at 140 KiB): the fast path hands its frees to the slow one, which
		 * caches it too. */
		char *b[9];
		for (int i = 0; i < 9; i++)
			b[i] = live_block(20000);
		M_FREE(b[7]);
		M_FREE(launder(b[7]));
	} else if (!strcmp(c, "free_interior_past_first_step")) {
		/* Inside a block past the first step of its slab: free finds the slab from that
		 * step's slot, and the index check refuses the address. */
		char *b[9];
		for (int i = 0; i < 9; i++)
			b[i] = live_block(20000);
		M_FREE(launder(b[7] + 16));
	} else if (!strcmp(c, "double_free_remote_past_first_step")) {
		/* The same block, freed by two other threads one after the other. */
		char *b[9];
		for (int i = 0; i < 9; i++)
			b[i] = live_block(20000);
		free_in_thread(b[7]);
		free_in_thread(b[7]);
		for (int i = 0; i < 1000; i++)
			live_block(20000);
	} else if (!strcmp(c, "double_free_cached_then_other")) {
		/* Cached by its owner's free, then freed by another thread. */
		char *p = live_block(3000);
		M_FREE(p);
		free_in_thread(p);
		for (int i = 0; i < 1000; i++)
			live_block(3000);
	} else if (!strcmp(c, "realloc_freed_cached")) {
		char *p = live_block(3000);
		M_FREE(p);
		printf("%p\n", M_REALLOC(launder(p), 100));
	} else if (!strcmp(c, "realloc_freed_cached_in_place")) {
		/* A size the block holds: realloc's in-place check must see the thread cache. */
		char *p = live_block(3000);
		M_FREE(p);
		printf("%p\n", M_REALLOC(launder(p), 2900));
	} else if (!strcmp(c, "realloc_freed_remote_overwritten")) {
		/* Freed by another thread, its first word written since, resized in place by the
		 * owner: the remote free's mark still shows it free. */
		char *p = live_block(80);
		free_in_thread(p);
		memset(p, 0x11, 8);
		printf("%p\n", M_REALLOC(launder(p), 72));
	} else if (!strcmp(c, "usable_size_freed_cached")) {
		char *p = live_block(3000);
		M_FREE(p);
		printf("%zu\n", M_USABLE(launder(p)));
	} else if (!strcmp(c, "double_free_after_realloc_moved")) {
		/* The old address of a huge block that realloc moved: freed by the move. */
		char *p = live_block(20 << 20);
		char *q = M_REALLOC(p, 40 << 20);
		if (!q || q == p) {
			fprintf(stderr, "setup: the block did not move\n");
			exit(3);
		}
		M_FREE(launder(p));
	} else if (!strcmp(c, "double_free_run")) {
		char *p = live_block(40000); /* a run of the page cache's sizes */
		M_FREE(p);
		M_FREE(launder(p));
	} else if (!strcmp(c, "double_free_large")) {
		char *p = live_block(1 << 20); /* a run straight from the node's pool */
		M_FREE(p);
		M_FREE(launder(p));
	} else if (!strcmp(c, "double_free_huge")) {
		char *p = live_block(9 << 20); /* a mapping of its own, kept by its pool after the first free */
		M_FREE(p);
		M_FREE(launder(p));
	} else if (!strcmp(c, "double_free_huge_piece_joined")) {
		/* A block from a piece cut off a freed chunk (pool/huge.c), freed, then the block in
		 * front of it, which joins the two: the piece's pointer is inside a cached chunk now,
		 * where a block began (a review: reported as an invalid pointer). */
		char *big = live_block(64 << 20);
		M_FREE(big);
		char *a = live_block(20 << 20), *b = live_block(20 << 20);
		M_FREE(b);
		M_FREE(a);
		M_FREE(launder(b));
	} else if (!strcmp(c, "double_free_huge_adopted")) {
		/* A huge block freed, then its cached mapping's first granule made a chunk of the
		 * pool, which grows under blocks of 1 MiB (pool/huge.h, np_huge_take_granule): its
		 * pointer lies in that chunk's header now (a review: reported as not the start of a
		 * block). */
		char *p = live_block(40 << 20);
		M_FREE(p);
		int adopted = 0;
		for (int i = 0; i < 64 && !adopted; i++) {
			char *q = live_block(1 << 20); /* kept: the pool must grow */
			adopted = q > p && q < p + (16 << 20);
		}
		if (!adopted) {
			fprintf(stderr, "setup: no 1 MiB block came from the freed block's pages\n");
			exit(3);
		}
		M_FREE(launder(p));
	} else if (!strcmp(c, "double_free_huge_unmapped")) {
		/* Larger than the pool keeps: unmapped by the first free. */
		char *p = live_block(100 << 20);
		M_FREE(p);
		M_FREE(launder(p));
	} else if (!strcmp(c, "double_free_owner_then_remote")) {
		/* Freed by its owner, then by another thread: caught by that thread's free. */
		char *p = live_block(80);
		M_FREE(p);
		free_in_thread(p);
		for (int i = 0; i < 1000; i++)
			live_block(80);
	} else if (!strcmp(c, "double_free_remote_then_owner")) {
		/* Freed by another thread, then by its owner. */
		char *p = live_block(80);
		free_in_thread(p);
		M_FREE(launder(p));
		for (int i = 0; i < 1000; i++)
			live_block(80);
	} else if (!strcmp(c, "double_free_living_then_owner")) {
		/* Freed by another thread that lives on, then by its owner. */
		char *p = live_block(80);
		free_in_living_thread(p);
		M_FREE(launder(p));
		for (int i = 0; i < 1000; i++)
			live_block(80);
	} else if (!strcmp(c, "double_free_exit_orphan")) {
		/* A block of a thread that has exited, freed twice by this one: the first free
		 * adopts the slab (this thread allocates the class and is the only one left), so
		 * the second is the owner's. */
		char *blocks[8] = {live_block(80)};
		in_thread(alloc_and_exit, blocks);
		M_FREE(blocks[3]);
		M_FREE(launder(blocks[3]));
		for (int i = 0; i < 1000; i++)
			live_block(80);
	} else if (!strcmp(c, "double_free_living_then_third")) {
		/* Freed by another thread that lives on, then by a third thread. */
		char *p = live_block(80);
		free_in_living_thread(p);
		free_in_thread(p);
		for (int i = 0; i < 1000; i++)
			live_block(80);
	} else if (!strcmp(c, "realloc_freed_small_living")) {
		/* Freed by another thread that lives on, then resized by its owner. */
		char *p = live_block(80);
		free_in_living_thread(p);
		printf("%p\n", M_REALLOC(launder(p), 72));
	} else if (!strcmp(c, "double_free_remote")) {
		/* Another thread frees an owner's block twice: caught when the owner collects. */
		char *p = live_block(80);
		pthread_t t;
		if (pthread_create(&t, NULL, free_twice, p) || pthread_join(t, NULL))
			return 3;
		for (int i = 0; i < 100000; i++)
			live_block(80);
	} else if (!strcmp(c, "double_free_remote_overwritten")) {
		/* Another thread frees a block, writes into it and frees it again. */
		char *p = live_block(80);
		in_thread(free_write_free, p);
		for (int i = 0; i < 100000; i++)
			live_block(80);
	} else if (!strcmp(c, "double_free_remote_overwritten_busy")) {
		/* The same among live blocks of the class, after another block of the slab. */
		double_free_among_live(free_other_then_write_twice);
	} else if (!strcmp(c, "double_free_remote_tail_overwritten")) {
		/* The same with the block freed twice at the remote list's tail: a collect that
		 * finds the owner's list not empty links the tail to it, which would have cut the
		 * second copy off the lists unseen (one block counted free too many: the slab given
		 * back under a live block). */
		double_free_among_live(free_two_then_write_first_twice);
	} else if (!strcmp(c, "double_free_two_threads")) {
		/* Two other threads free the same block, one after the other. */
		char *p = live_block(80);
		free_in_thread(p);
		free_in_thread(p);
		for (int i = 0; i < 100000; i++)
			live_block(80);
	} else if (!strcmp(c, "free_mmap")) {
		char *p = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 3;
		p[0] = 1;
		M_FREE(launder(p));
	} else if (!strcmp(c, "double_free_released_slab")) {
		/* 3,000-byte blocks, several slabs of them, all freed by their owner: the first slab
		 * went back to the thread's page cache, and a second free of a block past its first
		 * page was "not the start of a block" (a hostile test). */
		enum { N = 200 };
		static char *b[N];
		for (int i = 0; i < N; i++)
			b[i] = live_block(3000);
		for (int i = 0; i < N; i++)
			M_FREE(b[i]);
		M_FREE(launder(b[5]));
	} else if (!strcmp(c, "free_mmap_in_huge_granule")) {
		/* A page mapped in the 16 MiB granule of a block with a chunk of its own (8 MiB: a
		 * mapping of 10 MiB), past that chunk: the kernel puts libraries, stacks and the
		 * start-up allocator's regions there. It was taken for a piece of the block ("inside
		 * a large block"), and a start-up block there could not be freed. */
		for (int tries = 0; tries < 8; tries++) {
			char *b = M_MALLOC(8u << 20);
			if (!b)
				return 3;
			char *granule = (char *)((uintptr_t)b & ~(uintptr_t)((16u << 20) - 1));
			for (size_t mib = 15; mib >= 11; mib--) {
				char *p = mmap(granule + (mib << 20), 1 << 16, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
				if (p == granule + (mib << 20)) {
					p[0] = 1;
					M_FREE(launder(p));
					return 0;
				}
				if (p != MAP_FAILED)
					munmap(p, 1 << 16);
			}
		}
		return 3;
	} else if (!strcmp(c, "usable_size_foreign")) {
		char buf[64];
		memset(buf, 1, sizeof buf);
		printf("%zu\n", M_USABLE(launder(buf)));
	} else if (!strcmp(c, "realloc_freed_small")) {
		/* A shrink that would stay in place. */
		char *p = live_block(48);
		M_FREE(p);
		printf("%p\n", M_REALLOC(launder(p), 40));
	} else if (!strcmp(c, "realloc_freed_small_grow")) {
		char *p = live_block(48);
		M_FREE(p);
		printf("%p\n", M_REALLOC(launder(p), 4000));
	} else if (!strcmp(c, "realloc_freed_small_remote")) {
		/* Freed by another thread, then resized by its owner. */
		char *p = live_block(80);
		free_in_thread(p);
		printf("%p\n", M_REALLOC(launder(p), 72));
	} else if (!strcmp(c, "realloc_freed_small_by_other")) {
		/* Freed by its owner, then resized by another thread. */
		char *p = live_block(80);
		M_FREE(p);
		in_thread(realloc_in_thread, p);
	} else if (!strcmp(c, "usable_size_freed_small")) {
		char *p = live_block(48);
		M_FREE(p);
		printf("%zu\n", M_USABLE(launder(p)));
	} else if (!strcmp(c, "double_free_after_trim") || !strcmp(c, "realloc_freed_after_trim") ||
		   !strcmp(c, "realloc_freed_on_trimmed_page") || !strcmp(c, "usable_size_freed_on_trimmed_page") ||
		   !strcmp(c, "double_free_on_trimmed_page") || !strcmp(c, "double_free_on_trimmed_page_remote")) {
		/* A slab of 112-byte blocks, all freed but one on its first page, then trimmed: the
		 * page after it holds only free blocks and goes back to the kernel, and the block
		 * that reaches into it from the first page, whose first bytes stay resident, is
		 * used again. */
		enum { N = 1400 };
		static char *b[N];
		for (int i = 0; i < N; i++)
			b[i] = live_block(112);
		uintptr_t slab = (uintptr_t)b[0] & ~(uintptr_t)(128 * 1024 - 1);
		char *kept = NULL, *victim = NULL;
		/* The *_on_trimmed_page cases: a block wholly on the page given back, whose first
		 * word reads as zeros, as no free block's link does (a hostile review: realloc to a
		 * size its class holds handed it back as live, malloc_usable_size gave its size). */
		bool inside = strstr(c, "on_trimmed_page") != NULL;
		for (int i = 0; i < N; i++) {
			uintptr_t a = (uintptr_t)b[i];
			if (!kept && a >= slab && a + 112 <= slab + 4096) {
				kept = b[i];
				continue;
			}
			if (!inside && a > slab && a < slab + 4096 && a + 112 > slab + 4096)
				victim = b[i];
			if (inside && !victim && a >= slab + 4096 && a + 112 <= slab + 8192)
				victim = b[i];
			M_FREE(b[i]);
		}
		unsigned char resident = 1;
		numa_page_trim();
		if (!kept || !victim || mincore((void *)(slab + 4096), 4096, &resident) != 0 || (resident & 1)) {
			fprintf(stderr, "setup: no block reaching into a page trim gave back\n");
			exit(3);
		}
		/* double_free_on_trimmed_page*: the free was taken, by the owner or another thread,
		 * and the block handed out again to the next malloc of its class while still on the
		 * page, which then handed it out a second time (a hostile test, stop 65). */
		if (!strcmp(c, "double_free_on_trimmed_page_remote"))
			free_in_thread(launder(victim));
		else if (c[0] == 'd')
			M_FREE(launder(victim));
		else if (c[0] == 'u')
			printf("%zu\n", M_USABLE(launder(victim)));
		else
			printf("%p\n", M_REALLOC(launder(victim), inside ? 100 : 200));
	} else if (!strcmp(c, "free_sized_larger")) {
		char *p = live_block(100);
		M_FREE_SIZED(launder(p), 200);
	} else if (!strcmp(c, "free_sized_larger_run")) {
		char *p = live_block(100 << 10);
		M_FREE_SIZED(launder(p), 1 << 20);
	} else if (!strcmp(c, "free_sized_double")) {
		char *p = live_block(48);
		M_FREE(p);
		M_FREE_SIZED(launder(p), 48);
	} else if (!strcmp(c, "free_sized_double_cached")) {
		/* A class above 2 KiB: the first free puts the block on the thread's cache. */
		char *p = live_block(3000);
		M_FREE(p);
		M_FREE_SIZED(launder(p), 3000);
	} else if (!strcmp(c, "free_sized_stack")) {
		char buf[64];
		memset(buf, 1, sizeof buf);
		M_FREE_SIZED(launder(buf), sizeof buf);
	} else if (!strcmp(c, "free_aligned_sized_misaligned")) {
		/* Of two neighbours 48 bytes apart, one is not on a 4 KiB boundary. */
		char *p = live_block(48), *q = live_block(48);
		M_FREE_ALIGNED_SIZED(launder(((uintptr_t)p & 4095) ? p : q), 4096, 48);
	} else if (!strcmp(c, "free_aligned_sized_bad_alignment")) {
		char *p = live_block(96);
		M_FREE_ALIGNED_SIZED(launder(p), 48, 96);
	} else if (!strcmp(c, "realloc_stack_zero")) {
		char buf[64];
		memset(buf, 1, sizeof buf);
		printf("%p\n", M_REALLOC(launder(buf), 0));
	} else {
		fprintf(stderr, "unknown case %s\n", c);
		return 2;
	}
	for (int i = 0; i < 4; i++)
		M_FREE(keep[i]);
	fprintf(stderr, "%s: the misuse was not caught\n", c);
	return 0;
}
