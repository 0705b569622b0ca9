/*
 * bootstrap.c — the start-up arena (see bootstrap.h). Never returns memory: start-up
 * allocations are few and small (measured: hwloc's discovery is the bulk, tens of KiB).
 */
#include "malloc/bootstrap.h"

#include <stdint.h>

#include "os.h"

#define ARENA_BYTES (256u << 10)
#define REGION_BYTES ((size_t)1 << 20)
#define MAX_REGIONS 64
#define HEADER 16

static char arena[ARENA_BYTES] NP_ALIGNED(64);
static struct {
	uintptr_t start, end;
} regions[MAX_REGIONS] = {{(uintptr_t)0, (uintptr_t)0}};
static int nregions;
static uintptr_t bump, limit;
static size_t used_bytes;
static int spin;

static void lock(void)
{
	while (__atomic_exchange_n(&spin, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&spin, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

static void unlock(void)
{
	__atomic_store_n(&spin, 0, __ATOMIC_RELEASE);
}

void *np_bootstrap_alloc(size_t size, size_t align)
{
	if (align < HEADER)
		align = HEADER;
	if (size > ((size_t)1 << 40))
		return NULL;
	size = (size + 15) & ~(size_t)15;
	lock();
	if (!nregions) {
		regions[0].start = bump = (uintptr_t)arena;
		regions[0].end = limit = (uintptr_t)arena + ARENA_BYTES;
		nregions = 1;
	}
	uintptr_t p = (bump + HEADER + align - 1) & ~(uintptr_t)(align - 1);
	if (p + size > limit) {
		size_t need = size + align + HEADER;
		size_t bytes = need > REGION_BYTES ? (need + REGION_BYTES - 1) & ~(REGION_BYTES - 1) : REGION_BYTES;
		void *r = nregions < MAX_REGIONS ? np_os_map(bytes, 4096) : NULL;
		if (!r) {
			unlock();
			return NULL;
		}
		regions[nregions].start = bump = (uintptr_t)r;
		regions[nregions].end = limit = (uintptr_t)r + bytes;
		__atomic_store_n(&nregions, nregions + 1, __ATOMIC_RELEASE);
		p = (bump + HEADER + align - 1) & ~(uintptr_t)(align - 1);
	}
	((size_t *)p)[-1] = size;
	bump = p + size;
	used_bytes += size;
	unlock();
	return (void *)p;
}

bool np_bootstrap_owns(const void *p)
{
	uintptr_t a = (uintptr_t)p;
	int n = __atomic_load_n(&nregions, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++)
		if (a >= regions[i].start && a < regions[i].end)
			return true;
	return false;
}

size_t np_bootstrap_size(const void *p)
{
	return ((const size_t *)p)[-1];
}

size_t np_bootstrap_used(void)
{
	return used_bytes;
}
