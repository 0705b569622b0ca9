/*
 * lock.c — ranked mutexes (see lock.h).
 */
#include "lock.h"

NP_TLS uint64_t np_lock_held[NP_LOCK_RANKS];
NP_TLS unsigned np_lock_depth;

struct np_lock_page np_lock_page NP_LARGE_BSS;
_Static_assert(sizeof(struct np_lock_page) == 4096, "the lock page is one 4 KiB page");

/* Past the page: an orphan list and a huge cache a node, and a pool of NP_POOL_SHARDS (64)
 * shards a node (pool.h checks the number). Pages nobody writes cost no memory. */
#define MORE_SLOTS (NP_MAX_NODES * (2 + 64))
static struct np_lock more[MORE_SLOTS] NP_LARGE_BSS;
static unsigned handed; /* relaxed atomic: slots handed out, page first */

struct np_lock *np_lock_new(enum np_lock_rank rank, int index, bool adaptive)
{
	unsigned k = __atomic_fetch_add(&handed, 1, __ATOMIC_RELAXED);
	if (k >= NP_LOCK_PAGE_SLOTS + MORE_SLOTS)
		np_fatal("lock: more per-node locks asked for than %d nodes have", NP_MAX_NODES);
	struct np_lock *l = k < NP_LOCK_PAGE_SLOTS ? &np_lock_page.slot[k] : &more[k - NP_LOCK_PAGE_SLOTS];
	np_lock_init(l, rank, index, adaptive);
	return l;
}

void np_lock_setup(struct np_lock **l, enum np_lock_rank rank, int index, bool adaptive)
{
	if (*l)
		np_lock_init(*l, rank, index, adaptive);
	else
		*l = np_lock_new(rank, index, adaptive);
}

NP_FORK_CHILD void np_lock_init(struct np_lock *l, enum np_lock_rank rank, int index, bool adaptive)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	if (adaptive)
		pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&l->mutex, &a);
	pthread_mutexattr_destroy(&a);
	l->rank = (uint8_t)rank;
	l->index = (uint8_t)index;
	np_lock_note(l, false); /* a lock re-created in a fork child is not held */
}

NP_FORK_CHILD void np_lock_atfork_child(struct np_lock *l, enum np_lock_rank rank, int index, bool adaptive)
{
#ifdef __GLIBC__
	const pthread_mutex_t *m = &l->mutex;
	if (__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 0 && m->__data.__owner == 0 &&
	    m->__data.__nusers == 0)
		return;
#endif
	np_lock_init(l, rank, index, adaptive);
}

void np_lock_order_broken(const struct np_lock *l)
{
	int r = NP_LOCK_RANKS - 1;
	while (r > 0 && !np_lock_held[r])
		r--;
	np_fatal("lock order broken: taking rank %u index %d while holding rank %d (mask %llx)", np_lock_rank(l),
		 l->index, r, (unsigned long long)np_lock_held[r]);
}

NP_FORK_CHILD void np_lock_forget_all(void)
{
	for (int r = 0; r < NP_LOCK_RANKS; r++)
		NP_RESET(&np_lock_held[r], 0);
}
