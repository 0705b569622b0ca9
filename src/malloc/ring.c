/*
 * ring.c — a thread's rings of slabs (see ring.h). Runs on the owning thread only; the
 * fields other threads write are th->remote_pending (a hint that a sweep has work) and
 * th->claimed_away (how much of what it let float they claimed).
 */
#include "malloc/ring.h"

#include "log.h"
#include "malloc/cache.h"
#include "malloc/sizeclass.h"
#include "node/node.h"
#include "options.h"
#include "os.h"
#include "pcp/pcp.h"
#include "pool/pool.h"

/* Slab slow paths between two sweeps of a thread's rings. A slow path comes every slab's
 * worth of allocations of a class, so a sweep costs little per allocation, and memory that
 * other threads' frees emptied goes back within a bounded delay (larson and mstress, whose
 * frees are mostly remote, kept their peak RSS without it). A sweep is skipped when no other
 * thread freed into our slabs since the last one (a local free that empties a slab releases
 * it at once): single-threaded, larson's sweeps walked millions of slabs and released none. The fast
 * path's byte counters are folded into the statistics at the same pace. */
/* Slab slow paths the process makes between two orphan sweeps, per orphan the last one kept
 * (at least NP_RING_PERIOD). */
#define ORPHAN_SWEEP_EVERY 2

/* Full slabs a thread keeps in its ring of a class rather than letting them float. Each slow
 * path collects them (a load each while nobody freed into them), and blocks other threads free
 * come back to the owner without the trip a floating slab makes: claimed by the first such free,
 * handed to the node's orphans under a mutex, adopted back under it. In xmalloc, where every free
 * is remote, that trip ping-ponged the orphan lock between producer and consumer (docs/design.md
 * has the numbers). Beyond that, full slabs float, so a thread
 * with a large live set does not rescan it on every slow path. That holds while what a thread
 * lets go mostly comes back to it (its own frees take it back, at no lock); when other threads'
 * frees claim a quarter or more of it, each claim is the trip above, which costs more than the
 * rescans it saves (mstress/2: 95 K floats, 49 K orphaned and adopted again, per run), and the
 * thread keeps KEEP_FULL_CLAIMED. Decided every FLOATS_TO_JUDGE floats, at the periodic point. */
#define KEEP_FULL 4
#define KEEP_FULL_CLAIMED 16
#define FLOATS_TO_JUDGE 32

/* The owner's allocations and frees of s since it was last counted, into th's byte counters
 * (by the slab's node: the memory's). Wrapping differences: a collect takes other threads'
 * frees off used and counted alike. Writes s only where there is something to count: a walk
 * of every slab (an exact read, trim) reads the others, and a write makes a page dirty (in a
 * fork's child, a copy: docs/perf-issue15.md section 44). */
static void count(struct np_thread *th, struct np_slab *s)
{
	int32_t blocks = (int32_t)(s->used - s->counted);
	if (blocks == 0 && s->requested == 0)
		return;
	th->in_use[s->node] += (int64_t)blocks * s->block;
	th->requested[s->node] += s->requested;
	s->counted = s->used;
	s->requested = 0;
}

/* count, and the slab's next beat starts: its fast path's run ends here. */
static void count_restart(struct np_thread *th, struct np_slab *s)
{
	s->beat = np_slab_beat(s);
	count(th, s);
}

void np_ring_count(struct np_thread *th, bool every)
{
	for (int c = 0; c < NP_NCLASSES; c++) {
		struct np_slab *cur = th->ring[c];
		if (!cur)
			continue;
		if (!every) {
			count_restart(th, cur);
			continue;
		}
		struct np_slab *s = cur;
		do {
			count(th, s);
			s = s->next;
		} while (s != cur);
	}
}

/* Slabs a walk of a ring meets at most: far more than any ring holds. */
#define RING_WALK_MAX (1u << 20)

/* How many distinct slabs the walk from cur along next meets before it ends (a NULL link) or
 * comes back to cur. A ring caught mid-change by a fork (another thread's, or the forking
 * one's under a signal handler) may lead into a loop that misses cur: its members are each
 * counted once, found by Brent's cycle search, which only reads. At most RING_WALK_MAX. */
NP_FORK_CHILD static unsigned ring_members(const struct np_slab *cur)
{
	unsigned n = 0;
	const struct np_slab *s = cur;
	while (s && n < RING_WALK_MAX) {
		n++;
		s = s->next;
		if (s == cur)
			return n;
	}
	if (!s)
		return n;
	/* A loop: its length lam, then mu, the steps from cur into it. */
	unsigned power = 1, lam = 1;
	const struct np_slab *t = cur, *h = cur->next;
	while (t != h) {
		if (lam >= RING_WALK_MAX)
			return RING_WALK_MAX;
		if (power == lam) {
			t = h;
			power *= 2;
			lam = 0;
		}
		h = h->next;
		lam++;
	}
	unsigned mu = 0;
	t = h = cur;
	for (unsigned i = 0; i < lam; i++)
		h = h->next;
	while (t != h && mu < RING_WALK_MAX - lam) {
		t = t->next;
		h = h->next;
		mu++;
	}
	return mu + lam;
}

NP_FORK_CHILD void np_ring_uncounted(const struct np_thread *th, bool in_use, int64_t bytes[NP_MAX_NODES])
{
	for (int c = 0; c < NP_NCLASSES; c++) {
		const struct np_slab *s = th->ring[c];
		for (unsigned n = ring_members(s); n--; s = s->next)
			bytes[s->node] += in_use ? (int64_t)(int32_t)(s->used - s->counted) * s->block
						 : (int64_t)s->requested;
	}
}

/* Live threads whose ring of each class is not empty (np_ring_adopt_on_free). Changed only as
 * a ring gains its first slab or loses its last; read relaxed. A fork's child keeps the counts
 * of the threads that did not come along: it adopts less, which is what it did before. */
static int class_users[NP_NCLASSES];

/* s, in th's ring, serves mallocs in th's decay pass under way (np_ring_decay): kept for two
 * passes, and walked again at its next decay. */
static void serves(struct np_thread *th, struct np_slab *s)
{
	s->decay_pass = th->decay_passes;
	s->decay_used = 0;
}

/* Makes s the current slab of its class in th's ring, linking it in first when insert. */
static void make_current(struct np_thread *th, struct np_slab *s, bool insert)
{
	struct np_slab *cur = th->ring[s->cls];
	if (insert) {
		if (cur) {
			s->next = cur->next;
			s->prev = cur;
			cur->next->prev = s;
			cur->next = s;
		} else {
			s->next = s->prev = s;
			__atomic_add_fetch(&class_users[s->cls], 1, __ATOMIC_RELAXED);
		}
	}
	/* Both served mallocs in this decay pass: the one that stops being current until now,
	 * the other from now on. */
	if (cur)
		serves(th, cur);
	serves(th, s);
	th->ring[s->cls] = s;
	np_tls.cur[s->cls] = s;
}

/* s leaves th's ring: the decay's next step looks at its successor instead (none when s was
 * the last one: that class's walk is over). */
static void decay_passes_over(struct np_thread *th, const struct np_slab *s)
{
	if (NP_UNLIKELY(th->decay_at == s))
		th->decay_at = s->next != s ? s->next : NULL;
}

static void ring_unlink(struct np_thread *th, struct np_slab *s)
{
	unsigned c = s->cls;
	decay_passes_over(th, s);
	if (s->next == s) {
		th->ring[c] = NULL;
		np_tls.cur[c] = &np_slab_empty;
		__atomic_sub_fetch(&class_users[c], 1, __ATOMIC_RELAXED);
	} else {
		s->prev->next = s->next;
		s->next->prev = s->prev;
		if (th->ring[c] == s) {
			th->ring[c] = s->next;
			np_tls.cur[c] = s->next;
			serves(th, s->next);
		}
	}
	s->next = s->prev = NULL;
}

NP_INLINE bool has_free(struct np_slab *s)
{
	return s->free || np_slab_refill(s);
}

/* s is of a node the thread's memory is not meant for (the node walk fell back to it while the
 * node it is meant for was full), and that node can serve a slab again: s's blocks are no longer
 * handed out, and s goes back once empty, even as the current slab. A hostile review in the
 * 2-node guest: once node 0 had filled and emptied, a thread of node 0 got a slab's worth of
 * blocks per class from node 1, and as many as it liked of a class whose slab it kept a block
 * in. Not under an interleave, whose nodes are all meant. */
static bool spilled(const struct np_thread *th, const struct np_slab *s)
{
	if (np_pcp_near(&th->pcp, s->node) || th->pcp.policy.mode == NP_POLICY_INTERLEAVE || th->spill_hold)
		return false;
	return np_node_can_serve(th->pcp.target, np_class_slab_bytes(s->cls) >> NP_PAGE_SHIFT);
}

/* Slab misses during which spilled() says no after a new slab came from another node although
 * the thread's node could serve one by its count (a slab's pages are free there, but not a
 * batch of the page cache, or not as one aligned run): without the hold, every free that
 * emptied the current slab gave it back and the next malloc made another of the same node, and
 * every miss passed over the slabs with free blocks and made a new one (a review: 2,000 of
 * 2,000 frees released the slab; a ring of 296 slabs and 9,463 pages for a live set of 62).
 * malloc_trim ends a hold. */
#define SPILL_HOLD_MISSES 64

/* A block from s, or NULL when it has none: a pop refused for a bad link (np_slab_pop) is asked
 * again. */
NP_INLINE void *take_from(struct np_slab *s)
{
	while (has_free(s)) {
		uintptr_t b = np_slab_pop(s);
		if (b)
			return (void *)b;
	}
	return NULL;
}

/* s left th's ring full: it floats, unless remote frees raced in, when it comes back as the
 * current slab with their blocks. Returns a block from it in that case, else NULL. */
static void *let_go(struct np_thread *th, struct np_slab *s)
{
	count_restart(th, s);
	ring_unlink(th, s); /* out of our ring before it floats: a claimer may link it into its own */
	if (np_slab_float(s)) {
		th->floats++;
		return NULL;
	}
	make_current(th, s, true);
	return take_from(s);
}

/* Only when an orphan may have emptied since the last sweep: the sweep reads every node's list
 * heads of every class, lines other threads write, and collects every orphan (3.6% of
 * larson/2's time, docs/perf-issue15.md on bench15, 4.2). And not before the process has made
 * ORPHAN_SWEEP_EVERY slow paths (slab misses and large blocks) per orphan the last sweep kept:
 * a sweep costs a collect per orphan, so this bounds it to a fraction of a collect per slow
 * path however many orphans dead threads left (mstress/2 walked 127 per sweep and released one
 * in a thousand). The slow paths are counted over all threads, `calls` at a time (each thread's
 * periodic 64, and what is left of them at its exit), so that the short-lived threads of a pool
 * reach it together: one atomic add per 64 slow paths, only while orphans change. The thread
 * that reaches it sweeps, unless a sweep is under way (two at once would each see part of the
 * lists and store a short count of what they kept). */
static void count_for_orphans(unsigned calls)
{
	if (!calls || !__atomic_load_n(&np_slab_orphans_changed, __ATOMIC_RELAXED))
		return;
	size_t n = __atomic_add_fetch(&np_slab_orphan_calls, calls, __ATOMIC_RELAXED);
	if (n < ORPHAN_SWEEP_EVERY * __atomic_load_n(&np_slab_orphans_kept, __ATOMIC_RELAXED) ||
	    __atomic_exchange_n(&np_slab_sweeping, 1, __ATOMIC_ACQUIRE))
		return;
	np_slab_sweep_orphans(NP_SWEEP_COLLECT, NULL); /* which zeroes the count */
	__atomic_store_n(&np_slab_sweeping, 0, __ATOMIC_RELEASE);
}

void np_ring_periodic(struct np_thread *th)
{
	th->slow_calls = 0;
	if (th == np_tls.self)
		np_cache_age();
	np_ring_count(th, false);
	np_thread_fold_bytes(th);
	if (__atomic_load_n(&th->remote_pending, __ATOMIC_RELAXED)) {
		__atomic_store_n(&th->remote_pending, 0, __ATOMIC_RELAXED);
		np_ring_sweep(th);
	}
	if (__atomic_load_n(&th->claimed_away, __ATOMIC_RELAXED))
		th->floats_away += __atomic_exchange_n(&th->claimed_away, 0, __ATOMIC_RELAXED);
	if (th->floats >= FLOATS_TO_JUDGE) {
		th->keep_more = th->floats_away * 4 >= th->floats;
		th->floats = th->floats_away = 0;
	}
	count_for_orphans(NP_RING_PERIOD);
	np_ring_decay(th);
}

static void *ring_take(struct np_thread *th, unsigned c)
{
	if (np_config_debug >= 3) {
		const char *err = np_ring_check(th);
		if (err)
			np_fatal("malloc: thread state corrupt: %s", err);
	}
	np_ring_tick(th);
	struct np_slab *s = th->ring[c];
	void *b;
	if (th->spill_hold)
		th->spill_hold--;
	int over = -1; /* unknown; else whether slabs of a node it fell back to are passed over */
	if (s) {
		/* A miss the beat made due: at most one per NP_SLAB_BEAT mallocs of the class, so
		 * the decay looks here every time. A thread whose mallocs all hit took 64 of these
		 * per look, and its process kept the pages of huge blocks it had freed for minutes
		 * (a helper's test: 200 MB after 40 s of malloc(100) a millisecond; glibc 0.1 MB).
		 * Not every miss whose slab still yields a block: a fresh slab's page-by-page
		 * extension is one too, and a collect of remote frees, both far more often. */
		bool beat = s->beat < 0;
		/* The fast path's run on it ends here: its mallocs and frees are counted now, so that
		 * an exact read by another thread lacks at most one slab per class of ours. */
		count_restart(th, s);
		/* Slabs of a node the walk fell back to are passed over once the thread's node has
		 * room again (spilled): asked once a miss, at a slab of another node. */
		if (!np_pcp_near(&th->pcp, s->node))
			over = spilled(th, s);
		if (over != 1 && (b = take_from(s)) != NULL) {
			if (beat)
				np_thread_decay_now(th);
			return b;
		}
		/* The others in the ring: each yields blocks or, full, is let go (FLOATING), but
		 * for the first KEEP_FULL full ones, current included. */
		unsigned kept = 0, keep = th->keep_more ? KEEP_FULL_CLAIMED : KEEP_FULL;
		for (struct np_slab *t = s->next; t != s;) {
			struct np_slab *next = t->next;
			if (!np_pcp_near(&th->pcp, t->node) && (over < 0 ? (over = spilled(th, t)) : over)) {
				t = next;
				continue;
			}
			if ((b = take_from(t)) != NULL) {
				make_current(th, t, false);
				return b;
			}
			if (kept < keep)
				kept++;
			else if ((b = let_go(th, t)) != NULL)
				return b;
			t = next;
		}
		if (kept >= keep && over != 1 && (b = let_go(th, s)) != NULL) /* full, not passed over */
			return b;
	}
	/* Orphans of the nodes near this thread (left by exited threads, or claimed by frees). */
	uint64_t near = th->pcp.near;
	for (int n = 0; near; n++, near >>= 1) {
		if (!(near & 1))
			continue;
		struct np_slab *o;
		while ((o = np_slab_adopt(n, c, th)) != NULL) {
			make_current(th, o, true);
			if ((b = take_from(o)) != NULL)
				return b;
			if ((b = let_go(th, o)) != NULL)
				return b;
		}
	}
	s = np_slab_create(&th->pcp, c, th);
	if (!s && np_ring_give_back(th)) /* the last try before ENOMEM */
		s = np_slab_create(&th->pcp, c, th);
	if (!s)
		return NULL;
	/* Another node's slab although the thread's node could serve one by its count: hold. */
	if (!np_pcp_near(&th->pcp, s->node) && (over == 1 || spilled(th, s)))
		th->spill_hold = SPILL_HOLD_MISSES;
	make_current(th, s, true);
	return take_from(s);
}

void *np_ring_alloc(struct np_thread *th, unsigned c)
{
	/* The current slab's remote frees, taken in even while its free list lasts: the owner's
	 * frees go back onto it, so it may never run out (a slab miss made due by NP_SLAB_BEAT). */
	if (th->ring[c])
		np_slab_collect(th->ring[c]);
	void *b = ring_take(th, c);
	if (b) /* the fast path's slab again, when the beat had replaced it with the empty one */
		np_tls.cur[c] = th->ring[c];
	return b;
}

void np_ring_emptied(struct np_slab *s)
{
	/* Keep the current slab (the next malloc wants it), unless it is one of a node the
	 * thread's node no longer needs to fall back to (spilled); give the others' pages back. */
	struct np_thread *th = np_tls.self;
	if ((th->ring[s->cls] == s && !spilled(th, s)) || !np_slab_confirm_empty(s))
		return;
	count_restart(th, s);
	ring_unlink(th, s);
	np_slab_release(s, &th->pcp);
}

/* s, in th's ring but not current, collected: given back when that emptied it. True then. */
static bool release_if_empty(struct np_thread *th, struct np_slab *s)
{
	np_slab_collect(s);
	if (s->used != 0 || !np_slab_confirm_empty(s))
		return false;
	count_restart(th, s);
	decay_passes_over(th, s);
	s->prev->next = s->next;
	s->next->prev = s->prev;
	s->next = s->prev = NULL;
	np_slab_release(s, &th->pcp);
	return true;
}

static bool release_current_if_empty(struct np_thread *th, unsigned c);

unsigned np_ring_sweep(struct np_thread *th)
{
	unsigned released = 0;
	for (int c = 0; c < NP_NCLASSES; c++) {
		struct np_slab *cur = th->ring[c];
		if (!cur)
			continue;
		for (struct np_slab *s = cur->next; s != cur;) {
			struct np_slab *next = s->next;
			released += release_if_empty(th, s);
			s = next;
		}
		if (spilled(th, cur))
			released += release_current_if_empty(th, (unsigned)c);
	}
	return released;
}

/* th's current slab of class c, collected: given back when that emptied it (its class's next
 * malloc makes or adopts another). True then. */
static bool release_current_if_empty(struct np_thread *th, unsigned c)
{
	struct np_slab *s = th->ring[c];
	np_slab_collect(s);
	if (s->used != 0 || !np_slab_confirm_empty(s))
		return false;
	count_restart(th, s);
	ring_unlink(th, s);
	np_slab_release(s, &th->pcp);
	return true;
}

bool np_ring_give_back(struct np_thread *th)
{
	if (th == np_tls.self)
		np_cache_flush(); /* home first: their slabs may empty */
	unsigned released = np_ring_sweep(th);
	for (unsigned c = 0; c < NP_NCLASSES; c++)
		if (th->ring[c])
			released += release_current_if_empty(th, c);
	released += th->pcp.count || th->pcp.nruns;
	np_pcp_drain(&th->pcp);
	released += np_slab_sweep_orphans(NP_SWEEP_COLLECT, &th->st) > 0;
	return np_pool_give_back_space(&th->st) || released;
}

/* The decay's step on s, not current: given back whole when the collect empties it, else its
 * free pages when it served no malloc since before the pass before this one began (so for at
 * least a whole period: passes begin a period apart), and took a malloc or a free since its
 * last decay; counted in b. */
static void decay_slab(struct np_thread *th, struct np_slab *s, struct np_decay_budget *b)
{
	if (release_if_empty(th, s))
		return;
	if ((uint8_t)(th->decay_passes - s->decay_pass) >= 2 && !np_slab_decayed(s)) {
		b->pages += np_slab_decay(s, &th->st);
		b->decays++;
	}
}

/* A step of th's own decay pass at now (np_ring_decay): the slabs it read. */
static unsigned ring_decay_step(struct np_thread *th, uint64_t now, uint64_t period)
{
	/* A pass begins a period after the last began, once that one has gone over every ring:
	 * one that needs more calls than a period brings goes on where it stopped. */
	if (th->decay_class >= NP_NCLASSES && now - th->decay_began >= period) {
		th->decay_began = now;
		th->decay_passes++;
		th->decay_class = 0;
		th->decay_at = NULL;
	}
	/* A class's walk ends at its current slab: one that became current meanwhile ends it
	 * early, but that slab and the one it replaced served mallocs in this pass, so neither is
	 * due, and the slabs skipped are looked at in the next pass. */
	struct np_decay_budget b = {0};
	for (; th->decay_class < NP_NCLASSES; th->decay_class++, th->decay_at = NULL) {
		struct np_slab *cur = th->ring[th->decay_class];
		if (!cur)
			continue;
		for (struct np_slab *s = th->decay_at ? th->decay_at : cur->next; s != cur;) {
			if (np_decay_spent(&b)) {
				th->decay_at = s;
				return b.reads;
			}
			b.reads++;
			struct np_slab *next = s->next;
			decay_slab(th, s, &b); /* which may take s out of the ring */
			s = next;
		}
	}
	return b.reads;
}

/* A thread rests this many times a decay step's length after it: the decay takes a tenth of
 * its time at most, however much there is to give back (on the paravirtualized test host a
 * page costs as much to give back as to fault in: 400 MB of orphans took the thread that
 * stepped their decay 90% of its time for 2-4 s, its mallocs down from 350,000 to 7,000 a
 * second). */
#define DECAY_REST 9

unsigned np_ring_decay(struct np_thread *th)
{
	uint64_t period = (uint64_t)np_opt_load(decay_ms) * 1000000u;
	if (!period)
		return 0;
	uint64_t now = np_os_clock_ns();
	if ((int64_t)(now - th->decay_rest_until) < 0)
		return 0;
	unsigned orphans = np_slab_decay_orphans(now, period, &th->st);
	unsigned reads = ring_decay_step(th, now, period);
	if (orphans || reads) {
		uint64_t end = np_os_clock_ns();
		th->decay_rest_until = end + DECAY_REST * (end - now);
	}
	return reads;
}

size_t np_ring_purge(struct np_thread *th)
{
	size_t pages = 0;
	for (int c = 0; c < NP_NCLASSES; c++) {
		struct np_slab *cur = th->ring[c];
		if (!cur)
			continue;
		struct np_slab *s = cur;
		do {
			pages += np_slab_purge_free(s, &th->st);
			s = s->next;
		} while (s != cur);
	}
	return pages;
}

/* s, owned by th now, joins th's ring. */
static void link_taken(struct np_thread *th, struct np_slab *s)
{
	struct np_slab *cur = th->ring[s->cls];
	serves(th, s);
	if (cur) { /* behind the current slab: the current one keeps serving */
		s->next = cur->next;
		s->prev = cur;
		cur->next->prev = s;
		cur->next = s;
	} else {
		make_current(th, s, true);
	}
	/* Take in the block just pushed at once: with used exact, the frees still to come (now
	 * local) can empty it and give its pages back. Left in thread_free, it kept used at 1 for
	 * good where nobody else frees (the sweep runs only after other threads' frees): python
	 * held hundreds of empty slabs at exit (docs/design.md). */
	np_slab_collect(s);
	if (s->used == 0)
		np_ring_emptied(s);
}

void np_ring_take_back(struct np_thread *th, struct np_slab *s)
{
	__atomic_store_n(&s->owner, th, __ATOMIC_RELAXED);
	np_slab_set_state(s, NP_SLAB_OWNED);
	link_taken(th, s);
}

bool np_ring_adopt_on_free(struct np_thread *th, struct np_slab *s)
{
	if (!th->ring[s->cls])
		return false; /* its blocks are of no use to th's mallocs, and s would stay as th's
			       * current slab when its frees emptied it */
	if (__atomic_load_n(&class_users[s->cls], __ATOMIC_RELAXED) > 1)
		return false; /* another thread's malloc may want it */
	if (th->born_exits < np_slab_exit_of(s) && __atomic_load_n(&np_threads_live, __ATOMIC_RELAXED) > 1)
		return false; /* older than the exit: the exited thread's successor may want it */
	if (!__atomic_load_n(&s->listed, __ATOMIC_RELAXED) || !np_slab_adopt_listed(s, th))
		return false;
	link_taken(th, s);
	return true;
}

/* s has left its ring: its pages go back when nothing of it is in use, else it becomes an
 * orphan of its node (threads near that node adopt it; frees of its blocks find it there). */
static void hand_over(struct np_thread *th, struct np_slab *s, uint64_t exit)
{
	count_restart(th, s);
	np_slab_collect(s);
	if (s->used == 0 && np_slab_confirm_empty(s)) {
		np_slab_release(s, &th->pcp);
	} else {
		__atomic_store_n(&s->floater, np_slab_exit_tag(exit), __ATOMIC_RELAXED);
		np_slab_orphan(s);
	}
}

void np_ring_abandon(struct np_thread *th)
{
	uint64_t exit = __atomic_add_fetch(&np_thread_exits, 1, __ATOMIC_RELAXED);
	for (int c = 0; c < NP_NCLASSES; c++) {
		struct np_slab *s = th->ring[c];
		if (!s)
			continue;
		s->prev->next = NULL; /* open the ring */
		while (s) {
			struct np_slab *next = s->next;
			s->next = s->prev = NULL;
			hand_over(th, s, exit);
			s = next;
		}
		th->ring[c] = NULL;
		__atomic_sub_fetch(&class_users[c], 1, __ATOMIC_RELAXED);
	}
	th->decay_at = NULL;
	/* Its slow paths since its last periodic point, its slabs with live blocks now orphans. */
	count_for_orphans(th->slow_calls);
	th->slow_calls = 0;
}

void np_ring_leave(struct np_thread *th)
{
	if (th == np_tls.self)
		np_cache_flush(); /* into the slabs, which are handed over next */
	np_thread_fold_bytes(th);
	np_thread_forget_tls();
	np_ring_abandon(th); /* counts each slab as it leaves */
	np_thread_fold_bytes(th);
	np_thread_release(th);
}

unsigned np_ring_leave_far(struct np_thread *th, uint64_t near)
{
	unsigned left = 0;
	for (int c = 0; c < NP_NCLASSES; c++) {
		struct np_slab *s = th->ring[c];
		if (!s)
			continue;
		/* Every slab once: the ring shrinks under the walk, so count its members first. */
		unsigned n = 1;
		for (struct np_slab *t = s->next; t != s; t = t->next)
			n++;
		while (n--) {
			struct np_slab *next = s->next;
			if (!((near >> s->node) & 1)) {
				/* The current one too: the fast path moves on. An orphan even when empty:
				 * threads of its node adopt it, the orphan sweep gives it back otherwise;
				 * releasing it here would make the thread's pages_in_use jump at a moment
				 * the scheduler chose. */
				count_restart(th, s);
				ring_unlink(th, s);
				__atomic_store_n(&s->floater, np_slab_exit_tag(0), __ATOMIC_RELAXED);
				np_slab_orphan(s);
				left++;
			}
			s = next;
		}
	}
	return left;
}

/* s is one of the slabs of the ring whose current slab is cur (none when cur is NULL). */
static bool ring_holds(const struct np_slab *cur, const struct np_slab *s)
{
	const struct np_slab *t = cur;
	if (t) {
		do {
			if (t == s)
				return true;
			t = t->next;
		} while (t != cur);
	}
	return false;
}

const char *np_ring_check(const struct np_thread *th)
{
	for (int c = 0; c < NP_NCLASSES; c++) {
		const struct np_slab *s = th->ring[c];
		if (!s)
			continue;
		if (np_tls.self == th && np_tls.cur[c] != s && np_tls.cur[c] != &np_slab_empty)
			return "the fast path's current slab is not the ring's";
		const struct np_slab *t = s;
		do {
			if (t->cls != c)
				return "a slab sits in the ring of another class";
			if (t->owner != th)
				return "a slab in a thread's ring is owned by another";
			if (t->next->prev != t)
				return "broken slab ring";
			const char *err = np_slab_check(t);
			if (err)
				return err;
			t = t->next;
		} while (t != s);
	}
	if (th->decay_at && !(th->decay_class < NP_NCLASSES && ring_holds(th->ring[th->decay_class], th->decay_at)))
		return "the decay's next slab is not in the ring of its class";
	return np_pcp_check(&th->pcp);
}
