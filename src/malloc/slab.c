/*
 * slab.c — slabs of one size class (see slab.h). Owner-side operations run on the owning thread
 * without locks; thread_free is the only field other threads write, with CAS. The orphan lists
 * (one per node, with a list per class, under one lock per node: rank NP_LOCK_RANK_ORPHANS)
 * are touched only when a thread exits, when a full slab is claimed by a free from a thread
 * that did not let go of it, and when a thread adopts.
 */
#include "malloc/slab.h"

#include <limits.h>
#include <string.h>

#include "lock.h"
#include "log.h"
#include "os.h"
#include "topology/topology.h"
#include "vmstat/vmstat.h"

struct np_slab np_slab_empty;
uintptr_t np_slab_secret;
int np_slab_orphans_changed;
static uint64_t key_seed, mark_secret;

/* Orphans, by node and class. One lock per node (not per class), so fork holds few locks. */
struct orphan_list {
	struct np_lock *lock; /* rank NP_LOCK_RANK_ORPHANS, index node; on the lock page */
	struct np_slab *head[NP_NCLASSES];
	uint64_t gen[NP_NCLASSES]; /* see np_slab.list_gen: 64 bits, so it never comes back */
	/* The orphan the decay's next step on the list looks at first (NULL: its head). An orphan
	 * taken off the list moves it on to the next one. */
	struct np_slab *decay_at[NP_NCLASSES];
};
static struct orphan_list orphans[NP_MAX_NODES] NP_LARGE_BSS;
/* Set (relaxed, never cleared) when the first orphan is listed: until then a thread's slab
 * miss does not read the lists, a page of their table that a program whose threads never
 * exit would take a page fault on (a read allocates it where there is no shared zero page). */
static bool orphans_listed;
/* The orphans' decay passes (np_slab_decay_orphans): when the last began, how many (the count
 * np_slab_orphan stamps on a slab it lists), and the list the pass under way goes on with (node
 * * NP_NCLASSES + class; past the last: none under way). Relaxed atomics, written by the
 * sweeper (np_slab_sweeping) alone. */
static uint64_t orphan_pass_began;
static uint8_t orphan_passes;
static unsigned orphan_cursor = UINT_MAX;
static pthread_once_t orphans_once = PTHREAD_ONCE_INIT;

static void orphans_init(void)
{
	for (int n = 0; n < NP_MAX_NODES; n++)
		orphans[n].lock = np_lock_new(NP_LOCK_RANK_ORPHANS, n, false);
}

/* The slots of s's steps after its first name lead (s, or NULL when s is released). */
static void set_lead(const struct np_slab *s, struct np_slab *lead)
{
	size_t steps = np_class_slab_bytes(s->cls) / NP_SLAB_ALIGN;
	for (size_t k = 1; k < steps; k++)
		__atomic_store_n(&np_slab_at_step((const void *)(s->start + k * NP_SLAB_ALIGN))->lead, lead,
				 __ATOMIC_RELAXED);
}

struct np_slab *np_slab_create(struct np_pcp *pcp, unsigned cls, struct np_thread *owner)
{
	size_t bytes = np_class_slab_bytes(cls);
	size_t pages = bytes >> NP_PAGE_SHIFT;
	/* A slab fits the page cache's orders, or is one of the long runs it keeps (pcp.h). */
	struct np_page *run = pages <= 1u << (NP_PCP_ORDERS - 1) ? np_pcp_get(pcp, (unsigned)__builtin_ctzl(pages), -1)
								 : np_pcp_get_run(pcp, pages, pages, -1);
	if (!run)
		return NULL;
	struct np_slab *s = np_page_meta(run);
	memset(s, 0, sizeof *s);
	uint32_t block = np_class_size[cls];
	np_slab_set_block(s, block, (uint32_t)(bytes / block));
	s->cls = (uint8_t)cls;
	s->node = (uint8_t)np_page_node(run);
	s->run = run;
	s->start = (uintptr_t)np_page_addr(run);
	s->reserved = s->capacity;
	s->beat = np_slab_beat(s);
	/* Keyed by a process secret: an address and a count alone do not give it away. */
	static uint64_t counter;
	s->key = (uintptr_t)np_mix64(s->start ^ key_seed ^
				     __atomic_add_fetch(&counter, 0x9e3779b97f4a7c15ULL, __ATOMIC_RELAXED)) | 1;
	/* Through another secret: a block's two words do not give the key away more than its link. */
	s->mark = (uintptr_t)np_mix64(s->key ^ mark_secret) | 1;
	s->owner = owner;
	s->free_i = s->end;
	atomic_init(&s->thread_free, NP_SLAB_OWNED);
	np_page_set_state(run, NP_PAGE_SLAB);
	for (size_t i = 0; i < pages; i++)
		np_page_set_owner(&run[i], s);
	set_lead(s, s);
	np_slab_extend(s);
	return s;
}

void np_slab_extend(struct np_slab *s)
{
	uint32_t n = (uint32_t)(NP_PAGE_SIZE / s->block);
	if (n == 0)
		n = 1;
	if (n > s->reserved)
		n = s->reserved;
	uint32_t first = (uint32_t)(s->capacity - s->reserved);
	uintptr_t b = np_slab_block(s, first);
	for (uint32_t i = first + 1; i < first + n; i++, b += s->block)
		np_slab_set_link(s, b, i);
	np_slab_set_link(s, b, s->free_i);
	s->free = np_slab_block(s, first);
	s->free_i = (uint16_t)first;
	s->reserved -= n;
}

NP_NORETURN static void remote_double_free(const struct np_slab *s)
{
	np_fatal("free: double free or corruption (blocks freed by other threads) in slab %p", (void *)s->start);
}

void np_slab_pin_corrupt(struct np_slab *s, uintptr_t b, const char *what)
{
	static int reported;
	if (s->used < NP_SLAB_PINNED) {
		s->used += NP_SLAB_PINNED;
		s->counted += NP_SLAB_PINNED; /* a pin is no allocation */
	}
	np_vmstat_add(NULL, s->node, NUMA_PAGE_STAT_freelist_corrupt, 1);
	if (__atomic_exchange_n(&reported, 1, __ATOMIC_RELAXED))
		return;
	if (what)
		np_warn("malloc: free %u-byte blocks that trim had given back were written at %p (a write "
			"after free, or a double free?): %s (reported once)",
			s->block, (void *)b, what);
	else
		np_warn("malloc: a free list of %u-byte blocks is corrupt at %p (a write to freed memory, or a "
			"double free?): cut before it, the blocks from there on abandoned (reported once)",
			s->block, (void *)b);
}

/* A list of s is corrupt at block b, which is cut off with the blocks behind it. */
NP_COLD static void pin_corrupt(struct np_slab *s, uintptr_t b)
{
	np_slab_pin_corrupt(s, b, NULL);
}

uint32_t np_slab_collect(struct np_slab *s)
{
	/* Everything the list held was handed out (or cut off, and the slab pinned): a block
	 * pushed twice earlier has had its second copy reached (np_slab_pop). */
	if (!s->free)
		s->unchecked = 0;
	uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
	if (!(old & NP_SLAB_LIST_MASK))
		return 0;
	while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &old, old & NP_SLAB_STATE_MASK,
						      memory_order_acquire, memory_order_relaxed))
		;
	/* Every block was checked to be a block of this slab when it was pushed, and the pushers
	 * counted them and kept the oldest, so nothing is read from the list: its blocks were
	 * written by other CPUs, and each read is a cache miss before the pops take the same misses
	 * again (issue 15: a walk was 77% of collect's time; the read of the oldest block's link
	 * to check it, 54%). With free empty (a slab that ran out) the list becomes
	 * free as it is; else its oldest block is linked to free's head, a store. What a read
	 * found is found otherwise:
	 *  - a block freed twice by other threads (the marks and the racy walk at the second free
	 *    find nearly all; what they miss, when the program wrote the block's first 16 bytes
	 *    in between or two threads freed it at the same instant, is refused by the push when
	 *    the block is the list's head or tail, and else makes the list hold it twice, in a
	 *    cycle the tail is not on, so the relink below cannot cut it):
	 *    more frees than blocks in use aborts here; a copy further on is reached by the pops
	 *    when the block is in use, its link zeroed (np_slab_pop: never handed out twice; the
	 *    slab is pinned); and until then used may count a block too few, or blocks a second
	 *    push cut off the list, so a release counts the lists first (`unchecked`,
	 *    np_slab_confirm_empty), and aborts there;
	 *  - a link written over after the free: the pops check every link before following it
	 *    (the oldest block's, when it is relinked, is written anyway). */
	uint32_t n = np_slab_rlen(old);
	if (NP_UNLIKELY(n > s->used))
		remote_double_free(s);
	if (s->free)
		np_slab_set_link(s, np_slab_block(s, np_slab_rtail(old)), s->free_i);
	s->free = np_slab_block(s, np_slab_rhead(old));
	s->free_i = (uint16_t)np_slab_rhead(old);
	s->used -= n;
	s->counted -= n; /* their freers counted them */
	s->unchecked = 1;
	return n;
}

void np_slab_double_push(const struct np_slab *s, uintptr_t b)
{
	(void)s;
	np_fatal("free: double free of %p", (void *)b);
}

void np_slab_bad_link(struct np_slab *s, uintptr_t b)
{
	s->free = 0;
	s->free_i = s->end;
	pin_corrupt(s, b);
}

bool np_slab_confirm_empty(struct np_slab *s)
{
	/* A block freed twice by other threads and not yet reached can only be waiting on the
	 * remote list: collect it (more frees than blocks in use then aborts there). */
	np_slab_collect(s);
	if (s->used != 0)
		return false;
	/* Blocks on pages trim gave back: a second free of one whose first bytes lie there was
	 * taken, which made used count a block too few; it wrote its link on the page. */
	if (s->hidden && !np_slab_hidden_intact(s))
		return false;
	if (!s->unchecked)
		return true;
	/* Every block not handed out must be on free, once, or on a page trim gave back
	 * (`hidden`, and then on no list): a block in use is found by its link (zeroed when it
	 * was handed out), one freed twice by the bitmap. */
	uint64_t seen[NP_SLAB_ALIGN / 16 / 64] = {0}; /* a bit per block: capacity <= a step / 16 */
	np_assert(s->capacity <= sizeof seen * 8);
	uint32_t count = s->hidden ? np_slab_mark_hidden(s, seen) : 0;
	for (uintptr_t x = s->free; x;) {
		uint64_t i = np_slab_index(s, x);
		if (seen[i >> 6] >> (i & 63) & 1)
			remote_double_free(s);
		seen[i >> 6] |= 1ULL << (i & 63);
		count++;
		uint64_t link = np_slab_link(s, x);
		if (link > s->end) {
			pin_corrupt(s, x); /* kept */
			return false;
		}
		x = link < s->end ? np_slab_block(s, link) : 0;
	}
	if (count != (uint32_t)(s->capacity - s->reserved))
		remote_double_free(s); /* a block in use, not on the lists, not counted */
	s->unchecked = 0;
	return true;
}

void np_slab_init_secret(void)
{
	uint64_t r[3];
	np_os_random(r, sizeof r);
	np_slab_secret = (uintptr_t)r[0];
	key_seed = r[1];
	mark_secret = r[2];
}

void np_slab_release(struct np_slab *s, struct np_pcp *pcp)
{
	np_assert(s->used == 0);
	struct np_page *run = s->run;
	size_t pages = np_class_slab_bytes(s->cls) >> NP_PAGE_SHIFT;
	for (size_t i = 0; i < pages; i++)
		np_page_set_owner(&run[i], NULL);
	set_lead(s, NULL);
	np_page_set_state(run, NP_PAGE_USED);
	run->clean = 0; /* blocks were written: a calloc served by this run must zero it */
	__atomic_store_n(&s->owner, NULL, __ATOMIC_RELAXED);
	s->block = 0;
	np_pcp_put_held(pcp, run); /* no remote_free: each of its objects' frees was counted */
}

bool np_slab_float(struct np_slab *s)
{
	struct np_thread *owner = s->owner;
	/* Let go of ownership first: once FLOATING, a claimer may write owner at any time. */
	__atomic_store_n(&s->owner, NP_NO_OWNER, __ATOMIC_RELAXED);
	__atomic_store_n(&s->floater, owner, __ATOMIC_RELAXED);
	uintptr_t expect = NP_SLAB_OWNED;
	if (atomic_compare_exchange_strong_explicit(&s->thread_free, &expect, NP_SLAB_FLOATING,
						    memory_order_release, memory_order_relaxed))
		return true;
	__atomic_store_n(&s->owner, owner, __ATOMIC_RELAXED); /* remote frees arrived: keep it */
	return false;
}

void np_slab_set_state(struct np_slab *s, uintptr_t state)
{
	uintptr_t old = atomic_load_explicit(&s->thread_free, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&s->thread_free, &old, (old & ~(uintptr_t)NP_SLAB_STATE_MASK) | state,
						      memory_order_acq_rel, memory_order_relaxed))
		;
}

/* A list's head becomes s (l's lock held): a relaxed store, since np_slab_adopt, sweep_list
 * and decay_list peek at the head without the lock (a hint, checked under it). */
static void set_head_locked(struct orphan_list *l, unsigned c, struct np_slab *s)
{
	__atomic_store_n(&l->head[c], s, __ATOMIC_RELAXED);
}

/* s at the head of its list of l (l's lock held). */
static void list_locked(struct orphan_list *l, struct np_slab *s)
{
	if (!__atomic_load_n(&orphans_listed, __ATOMIC_RELAXED))
		__atomic_store_n(&orphans_listed, true, __ATOMIC_RELAXED);
	s->next = l->head[s->cls];
	s->prev = NULL;
	if (s->next)
		s->next->prev = s;
	set_head_locked(l, s->cls, s);
	s->list_gen = l->gen[s->cls];
	__atomic_store_n(&s->listed, 1, __ATOMIC_RELAXED);
}

/* s off its list of l (l's lock held): no free adopts it until it is listed again. */
static void unlist_locked(struct orphan_list *l, struct np_slab *s)
{
	if (l->decay_at[s->cls] == s)
		l->decay_at[s->cls] = s->next;
	if (s->prev)
		s->prev->next = s->next;
	else
		set_head_locked(l, s->cls, s->next);
	if (s->next)
		s->next->prev = s->prev;
	__atomic_store_n(&s->listed, 0, __ATOMIC_RELAXED);
}

void np_slab_orphan(struct np_slab *s)
{
	pthread_once(&orphans_once, orphans_init);
	__atomic_store_n(&s->owner, NP_NO_OWNER, __ATOMIC_RELAXED);
	np_slab_set_state(s, NP_SLAB_ORPHAN);
	struct orphan_list *l = &orphans[s->node];
	/* The orphans' decay counts its passes from here (and walks it at least once). */
	s->decay_pass = __atomic_load_n(&orphan_passes, __ATOMIC_RELAXED);
	s->decay_used = 0;
	np_lock(l->lock);
	list_locked(l, s);
	np_unlock(l->lock);
	np_slab_note_orphan_free();
}

static void take_owned(struct np_slab *s, struct np_thread *owner)
{
	s->next = s->prev = NULL;
	__atomic_store_n(&s->owner, owner, __ATOMIC_RELAXED);
	np_slab_set_state(s, NP_SLAB_OWNED);
}

bool np_slab_adopt_listed(struct np_slab *s, struct np_thread *owner)
{
	struct orphan_list *l = &orphans[s->node];
	np_lock(l->lock);
	bool listed = s->listed && s->list_gen == l->gen[s->cls];
	if (listed)
		unlist_locked(l, s);
	np_unlock(l->lock);
	if (listed)
		take_owned(s, owner);
	return listed;
}

struct np_slab *np_slab_adopt(int node, unsigned cls, struct np_thread *owner)
{
	struct orphan_list *l = &orphans[node];
	if (!__atomic_load_n(&orphans_listed, __ATOMIC_RELAXED) ||
	    !__atomic_load_n(&l->head[cls], __ATOMIC_RELAXED)) /* racy peeks: hints, checked under the lock */
		return NULL;
	pthread_once(&orphans_once, orphans_init);
	np_lock(l->lock);
	struct np_slab *s = l->head[cls];
	if (s)
		unlist_locked(l, s);
	np_unlock(l->lock);
	if (!s)
		return NULL;
	take_owned(s, owner);
	return s;
}

size_t np_slab_orphans_kept;
size_t np_slab_orphan_calls;
int np_slab_sweeping;

/* Node n's orphans of class c, taken whole (no free adopts one meanwhile), collected: the empty
 * ones released (their pages added to *pages), the others given back as `how` says and listed
 * again; *kept counts them. */
static void sweep_list(int n, int c, enum np_sweep how, size_t *pages, size_t *kept, struct np_vmstat_diffs *st)
{
	struct orphan_list *l = &orphans[n];
	if (!__atomic_load_n(&l->head[c], __ATOMIC_RELAXED))
		return;
	np_lock(l->lock);
	struct np_slab *s = l->head[c], *keep = NULL;
	set_head_locked(l, (unsigned)c, NULL);
	l->decay_at[c] = NULL;
	l->gen[c]++; /* they are this sweep's now: no free adopts one meanwhile */
	np_unlock(l->lock);
	while (s) {
		struct np_slab *next = s->next;
		np_slab_collect(s);
		if (s->used == 0 && np_slab_confirm_empty(s)) {
			*pages += np_class_slab_bytes(s->cls) >> NP_PAGE_SHIFT;
			np_slab_release(s, NULL);
		} else {
			if (how == NP_SWEEP_TRIM) /* out of the list: nobody adopts it meanwhile */
				*pages += np_slab_purge_free(s, st);
			s->next = keep;
			keep = s;
			(*kept)++;
		}
		s = next;
	}
	if (keep) {
		np_lock(l->lock);
		struct np_slab *t = keep, *prev = NULL;
		for (;; prev = t, t = t->next) {
			t->prev = prev;
			t->list_gen = l->gen[c];
			if (!t->next)
				break;
		}
		t->next = l->head[c];
		if (t->next)
			t->next->prev = t;
		set_head_locked(l, (unsigned)c, keep);
		np_unlock(l->lock);
	}
}

size_t np_slab_sweep_orphans(enum np_sweep how, struct np_vmstat_diffs *st)
{
	size_t pages = 0, kept = 0;
	pthread_once(&orphans_once, orphans_init);
	__atomic_store_n(&np_slab_orphan_calls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&np_slab_orphans_changed, 0, __ATOMIC_RELAXED);
	for (int n = 0; n < np_topo_table.nnodes; n++)
		for (int c = 0; c < NP_NCLASSES; c++)
			sweep_list(n, c, how, &pages, &kept, st);
	__atomic_store_n(&np_slab_orphans_kept, kept, __ATOMIC_RELAXED);
	return pages;
}

/* An orphan the orphans' decay pass `pass` gives back: listed two or more passes before it (no
 * malloc since, for a whole period at least), not looked at in this pass yet (so a pass ends
 * however often its orphans are freed into), and freed into since its last decay (its count,
 * or other threads' frees not collected yet). */
static bool orphan_due(const struct np_slab *s, uint8_t pass)
{
	return (uint8_t)(pass - s->decay_pass) >= 2 && s->decay_seen != pass &&
	       (!np_slab_decayed(s) || (atomic_load_explicit(&s->thread_free, memory_order_relaxed) & NP_SLAB_LIST_MASK));
}

/* What a step of the orphans' decay did on a list. */
enum decay_step { DECAY_NONE_DUE, DECAY_LIST_DONE, DECAY_LIST_MORE };

/* A step of the orphans' decay pass `pass` on node n's list of class c, from where the last
 * step stopped, as far as budget b goes: it walks the list under its lock to the next orphan
 * due and takes it off the list (the others stay listed, so adoptions go on, and a fork
 * meanwhile loses only the orphans the step holds in its child, as it would a trim's), then,
 * with the lock dropped, collects it, releases it when that emptied it, else gives its free
 * pages back (np_slab_decay); and so on. The orphans it kept are listed again at the end, at
 * the head: behind where the pass goes on. */
static enum decay_step decay_list(int n, int c, uint8_t pass, struct np_decay_budget *b, struct np_vmstat_diffs *st)
{
	struct orphan_list *l = &orphans[n];
	if (!__atomic_load_n(&l->head[c], __ATOMIC_RELAXED))
		return DECAY_NONE_DUE;
	struct np_slab *held[NP_DECAY_SLABS], *s;
	int took = 0, kept = 0;
	for (;;) {
		np_lock(l->lock);
		/* No place kept: the list's head, or its end once this step took one (the orphans
		 * behind the one it took left the list meanwhile). */
		s = l->decay_at[c] ? l->decay_at[c] : took ? NULL : l->head[c];
		for (; s && b->reads < NP_DECAY_LOOKS && !orphan_due(s, pass); s = s->next)
			b->reads++;
		bool take = s && !np_decay_spent(b);
		if (take) {
			b->reads++;
			l->decay_at[c] = s->next;
			unlist_locked(l, s);
		} else {
			l->decay_at[c] = s; /* NULL: the list is done in this pass */
		}
		np_unlock(l->lock);
		if (!take)
			break;
		b->decays++;
		took++;
		s->decay_seen = pass;
		np_slab_collect(s);
		if (s->used == 0 && np_slab_confirm_empty(s)) {
			np_slab_release(s, NULL);
		} else {
			b->pages += np_slab_decay(s, st);
			held[kept++] = s;
		}
	}
	if (kept) {
		np_lock(l->lock);
		for (int i = 0; i < kept; i++)
			list_locked(l, held[i]);
		np_unlock(l->lock);
	}
	return s ? DECAY_LIST_MORE : took ? DECAY_LIST_DONE : DECAY_NONE_DUE;
}

/* A period has passed since the orphans' last pass began, or none began yet. Signed: a thread
 * whose `now` is older than a pass another began meanwhile finds it not due. */
static bool pass_due(uint64_t now, uint64_t period_ns)
{
	uint64_t began = __atomic_load_n(&orphan_pass_began, __ATOMIC_RELAXED);
	return !began || (int64_t)(now - began) >= (int64_t)period_ns;
}

unsigned np_slab_decay_orphans(uint64_t now, uint64_t period_ns, struct np_vmstat_diffs *st)
{
	struct np_decay_budget b = {0};
	unsigned lists = (unsigned)np_topo_table.nnodes * NP_NCLASSES;
	if ((__atomic_load_n(&orphan_cursor, __ATOMIC_RELAXED) >= lists && !pass_due(now, period_ns)) ||
	    __atomic_exchange_n(&np_slab_sweeping, 1, __ATOMIC_ACQUIRE))
		return 0;
	pthread_once(&orphans_once, orphans_init);
	unsigned at = orphan_cursor;
	if (at >= lists) {
		if (!pass_due(now, period_ns)) /* again, as the only sweeper: one pass a period */
			goto out;
		__atomic_store_n(&orphan_pass_began, now, __ATOMIC_RELAXED);
		__atomic_add_fetch(&orphan_passes, 1, __ATOMIC_RELAXED);
		at = 0;
	}
	/* Lists with none due are passed over; a step ends after one that had some, on the next
	 * list, or on the same one when it has more. */
	for (enum decay_step d = DECAY_NONE_DUE; at < lists && d == DECAY_NONE_DUE;) {
		d = decay_list((int)(at / NP_NCLASSES), (int)(at % NP_NCLASSES), orphan_passes, &b, st);
		if (d != DECAY_LIST_MORE)
			at++;
	}
	__atomic_store_n(&orphan_cursor, at, __ATOMIC_RELAXED);
out:
	__atomic_store_n(&np_slab_sweeping, 0, __ATOMIC_RELEASE);
	return b.reads;
}

void np_slab_atfork_prepare(void)
{
	pthread_once(&orphans_once, orphans_init);
	for (int n = 0; n < np_topo_table.nnodes; n++)
		np_lock(orphans[n].lock);
}

void np_slab_atfork_parent(void)
{
	for (int n = np_topo_table.nnodes - 1; n >= 0; n--)
		np_unlock(orphans[n].lock);
}

NP_FORK_CHILD void np_slab_atfork_child(void)
{
	NP_RESET(&np_slab_sweeping, 0); /* a sweep by a thread the child does not have */
	for (int n = 0; n < np_topo_table.nnodes; n++)
		if (orphans[n].lock) /* none before the first orphan (orphans_init) */
			np_lock_atfork_child(orphans[n].lock, NP_LOCK_RANK_ORPHANS, n, false);
}

/* Walks one list from head (an address, or 0), a link followed only when it is a block
 * index, at most capacity + 1 steps; counts the blocks in *n when n is not NULL. Links are read
 * with relaxed loads: a thread that does not own the slab walks while the owner rewrites them
 * (np_slab_holds_free_racy), and any value it reads is checked before it is used. */
static bool list_holds(const struct np_slab *s, uintptr_t head, uintptr_t b, uint32_t *n)
{
	uint32_t k = 0;
	for (uintptr_t x = head; x && k <= s->capacity; k++) {
		if (x == b)
			return true;
		uint64_t link = np_slab_link(s, x);
		x = link < s->end ? np_slab_block(s, link) : 0;
	}
	if (n)
		*n += k;
	return false;
}

bool np_slab_holds_free(const struct np_slab *s, uintptr_t b)
{
	return list_holds(s, s->free, b, NULL);
}

bool np_slab_confirm_free(struct np_slab *s, uintptr_t b, const struct np_thread *self)
{
	if (np_slab_is_hidden(s, b))
		return true;
	if (self && __atomic_load_n(&s->owner, __ATOMIC_RELAXED) == self) {
		np_slab_collect(s);
		return np_slab_holds_free(s, b);
	}
	return np_slab_holds_free_racy(s, b);
}

bool np_slab_holds_free_racy(const struct np_slab *s, uintptr_t b)
{
	uintptr_t lists[2] = {__atomic_load_n(&s->free, __ATOMIC_RELAXED), 0};
	uintptr_t tf = atomic_load_explicit(&s->thread_free, memory_order_acquire);
	if (np_slab_rlen(tf))
		lists[1] = np_slab_block(s, np_slab_rhead(tf));
	for (int k = 0; k < 2; k++)
		if ((lists[k] == 0 || np_slab_is_block(s, lists[k])) && list_holds(s, lists[k], b, NULL))
			return true;
	return false;
}

const char *np_slab_check(const struct np_slab *s)
{
	/* The heads are the allocator's own fields; the links behind them live in freed blocks,
	 * which the program may have overwritten: a bad link there is not a broken invariant but
	 * a corruption that np_slab_pop cuts (and counts) when it gets there. */
	if (s->free && !np_slab_is_block(s, s->free))
		return "the free list's head is no block of the slab";
	if (s->free_i != np_slab_index_or_end(s, s->free))
		return "free_i is not the index of free's head";
	if (s->fast_end != (s->hidden ? 0 : s->end))
		return "fast_end is not end, or 0 while pages are hidden";
	uint32_t count = 0;
	list_holds(s, s->free, 0, &count); /* 0 is no block: walks the whole list */
	if (count > s->capacity)
		return "the free list is longer than the slab (cycle: double free?)";
	uint32_t hidden = 0;
	if (s->hidden) {
		if (np_class_slab_bytes(s->cls) != NP_SLAB_ALIGN)
			return "a slab longer than a step has hidden pages";
		uint64_t bits[NP_SLAB_ALIGN / 16 / 64] = {0};
		hidden = np_slab_mark_hidden(s, bits);
		if (s->used < NP_SLAB_PINNED && hidden + (uint64_t)s->reserved > s->capacity)
			return "hidden blocks reach into the never-used ones";
		uint32_t k = 0;
		for (uintptr_t x = s->free; x && k <= s->capacity; k++) {
			uint64_t i = np_slab_index(s, x);
			if (s->used < NP_SLAB_PINNED && (bits[i >> 6] >> (i & 63) & 1))
				return "a block on the free list lies on a hidden page (a double free?)";
			uint64_t link = np_slab_link(s, x);
			x = link < s->end ? np_slab_block(s, link) : 0;
		}
	}
	if (s->used < NP_SLAB_PINNED && (uint64_t)count + hidden + s->used + s->reserved > s->capacity)
		return "used + free + hidden + reserved blocks exceed the capacity";
	if (s->run->state != NP_PAGE_SLAB || np_page_owner(s->run) != s)
		return "the slab's run does not point back at it";
	if (s->lead)
		return "the slab's own header names a lead";
	if (s->beat > np_slab_beat(s))
		return "the beat is longer than NP_SLAB_BEAT or the capacity";
	for (size_t k = 1; k < np_class_slab_bytes(s->cls) / NP_SLAB_ALIGN; k++)
		if (np_slab_lead(s->start + k * NP_SLAB_ALIGN) != s)
			return "a later step of the slab does not name it";
	return NULL;
}
