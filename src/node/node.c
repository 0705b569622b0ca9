/*
 * node.c — which node serves a request (see node.h). The tables are filled once by
 * np_node_init from the frozen topology and the pools; the shared state read afterwards is the
 * pools' free-page counts and the room estimates, racily, as hints.
 *
 * Sharing among equidistant pools. The first design stole for a memoryless node when its first
 * choice had fewer free pages per CPU than the average over the pools. But pools grow on
 * demand: a pool's free pages are what is left of its last chunk, not what the node has, and a
 * pool nobody had used yet had none, so it was never stolen from. In the 2990wx guest the
 * memoryless nodes' pages split 97/3, 21/79 and 88/12 in three runs. Now each batch a thread of
 * a memoryless node takes comes from the next member of its group with room, in turn: its
 * pages split evenly by construction, its lock traffic too, and a full member is passed over.
 */
#include "node/node.h"

#include "log.h"
#include "options.h"
#include "os.h"
#include "pool/pool.h"
#include "vmstat/vmstat.h"

/* Per node: where its threads go first, and the equidistant group it shares. */
static int primary[NP_MAX_NODES];
static int primary_at[NP_MAX_NODES]; /* its index in the group: a thread's first pick */
/* A node's group is the start of its fallback list (the nearest nodes with memory, equidistant,
 * OS id order), group_n[n] entries long: read there, not copied (a copy was a table of 4 KiB,
 * a page written at every process start). */
static int group_n[NP_MAX_NODES];
static uint64_t near[NP_MAX_NODES];
static size_t cpus_served[NP_MAX_NODES];
static const struct np_topo *topo;

/*
 * Room per node, all racy hints (relaxed atomics). avail: pages the node had available at the
 * last read, at read_at (np_os_clock_ns); in_use_at: the node's pages_in_use then. What the
 * library took since (in_use now minus then) comes off avail; pages handed out and never
 * touched count as taken, which errs on the safe side. skip: questions to answer "full"
 * without reading again.
 */
struct room {
	size_t avail;
	long in_use_at;
	uint64_t read_at;
	unsigned skip;
	bool known;
};
static struct room room[NP_MAX_NODES];
static size_t node_pages[NP_MAX_NODES]; /* this machine's nodes only: 0 in a rehearsal */
/* This machine's only node with memory (its free memory is the machine's), else -1. */
static int only_memory_node = -1;
#define ROOM_SKIP 64
/* What other processes took of a node is seen by reading it again: at the latest when the last
 * read is this old (a helper's guest: another process filled a node after the library's read,
 * and the pages the library then handed out there faulted in on another node, counted as
 * hits on the full one). */
#define ROOM_MAX_AGE_NS (100 * 1000000ull)
/* A node is nearly full (np_pool_set_low: new chunks verified page by page) below this many
 * reserves of room. */
#define LOW_RESERVES 4

/* Kept free on each node. With MPOL_PREFERRED binding, two chunks (what a few threads growing
 * at once map) and 1/64 of the node; what goes past it spills, which the chunk checks catch.
 * With strict binding going past it gets the process OOM-killed: twice as much, and only
 * free memory counts (see reread). */
static size_t reserve_of(int node)
{
	bool strict = np_opt_load(bind) == NP_BIND_STRICT;
	return (strict ? 4 : 2) * NP_CHUNK_PAGES + node_pages[node] / (strict ? 32 : 64);
}

void np_node_init(const struct np_topo *t)
{
	topo = t;
	/* Equidistant nearest groups; memoryless nodes sharing a group are dealt its members in
	 * turn as first choices (the pool whose CPUs they count). */
	int dealt[NP_MAX_NODES] = {0};
	for (int n = 0; n < NP_MAX_NODES; n++) {
		group_n[n] = 0;
		near[n] = 0;
		cpus_served[n] = 0;
		primary[n] = n;
		primary_at[n] = 0;
		room[n] = (struct room){0};
		node_pages[n] = 0;
	}
	for (int n = 0; n < t->nnodes; n++) {
		const struct np_topo_node *nd = &t->node[n];
		const uint8_t *group = nd->fallback;
		while (group_n[n] < nd->nfallback && nd->fallback_dist[group_n[n]] == nd->fallback_dist[0])
			group_n[n]++;
		near[n] = nd->mem_allowed ? 1ULL << n : 0;
		for (int k = 0; !nd->mem_allowed && k < group_n[n]; k++)
			near[n] |= 1ULL << group[k];
		if (t->is_system && nd->mem_allowed)
			node_pages[n] = nd->mem_bytes >> NP_PAGE_SHIFT;
		if (nd->mem_allowed || group_n[n] <= 1) {
			primary[n] = group_n[n] ? group[0] : n;
			continue;
		}
		int first = group[0];
		primary_at[n] = dealt[first] % group_n[n];
		primary[n] = group[primary_at[n]];
		dealt[first]++;
	}
	/* Only where the kernel has node files to read: on a kernel without NUMA no room was ever
	 * judged (the kernel decides), and that stays so. */
	only_memory_node = -1;
	for (int n = 0, count = 0; t->is_system && np_os_lists_nodes() && n < t->nnodes; n++)
		if (t->node[n].has_memory)
			only_memory_node = ++count == 1 ? n : -1;
	for (int c = 0; c < t->ncpus; c++) {
		int n = t->cpu[c].node;
		if (n >= 0 && t->cpu[c].allowed && np_pools[primary[n]].exists)
			cpus_served[primary[n]]++;
	}
}

int np_node_primary(int node)
{
	return primary[node];
}

size_t np_node_cpus_served(int node)
{
	return cpus_served[node];
}

uint64_t np_node_near(int home)
{
	return near[home];
}

static size_t free_pages(int node)
{
	return np_pool_free_pages(node);
}

int np_node_pick(int home, unsigned *rotor, size_t pages, bool *shared)
{
	int first = primary[home];
	*shared = false;
	if (group_n[home] <= 1)
		return first;
	const uint8_t *group = topo->node[home].fallback;
	for (int k = 0; k < group_n[home]; k++) {
		int cand = group[((unsigned)primary_at[home] + *rotor + (unsigned)k) % (unsigned)group_n[home]];
		if (np_node_can_serve(cand, pages)) {
			*rotor += (unsigned)k + 1;
			*shared = cand != first;
			return cand;
		}
	}
	return first;
}

size_t np_node_free_nearby(int node)
{
	const struct np_pool *p = &np_pools[primary[node]];
	size_t mapped = __atomic_load_n(&p->mapped_pages, __ATOMIC_RELAXED); /* a relaxed atomic */
	size_t room_pages = p->limit_pages > mapped ? p->limit_pages - mapped : 0;
	return free_pages(primary[node]) + room_pages;
}

/* ---- Task memory policy ---------------------------------------------------------------- */

static bool bind_given(void)
{
	int i = np_options_find("bind");
	return i >= 0 && np_options_source(i) != NP_OPTION_DEFAULT;
}

void np_node_policy(struct np_topo_policy *pol)
{
	if (bind_given()) {
		*pol = (struct np_topo_policy){.mode = NP_POLICY_DEFAULT, .kernel_mode = -1};
		return;
	}
	np_topo_read_policy(topo, pol);
}

void np_node_policy_verbose(void)
{
	if (!np_log_verbose)
		return;
	struct np_topo_policy pol;
	np_topo_read_policy(topo, &pol);
	char what[160];
	np_topo_policy_describe(topo, &pol, what, sizeof what);
	if (!topo->is_system)
		np_verbose("memory policy: not read (a rehearsed topology: its nodes are not the kernel's)");
	else if (topo->nmem_nodes < 2)
		np_verbose("memory policy: not read (one memory node: its memory has nowhere else to go)");
	else if (pol.mode != NP_POLICY_DEFAULT && bind_given())
		np_verbose("memory policy: %s, not followed: NUMAPAGE_BIND is given, the library places and binds its memory itself", what);
	else if (pol.mode == NP_POLICY_PREFERRED)
		np_verbose("memory policy: %s: each thread's memory comes from the nearest of them first", what);
	else if (pol.mode == NP_POLICY_INTERLEAVE)
		np_verbose("memory policy: %s: the library's batches of pages and large blocks are spread over them in turn", what);
	else
		np_verbose("memory policy: %s: each thread's memory comes from the node of its CPU", what);
}

/* The k'th (from 0) set bit of m; m is not 0. */
static int nth_bit(uint64_t m, unsigned k)
{
	while (k--)
		m &= m - 1;
	return __builtin_ctzll(m);
}

int np_node_target(const struct np_topo_policy *pol, int home, unsigned *rotor)
{
	if (!pol || pol->mode == NP_POLICY_DEFAULT || !pol->nodes)
		return home;
	if (pol->mode == NP_POLICY_INTERLEAVE) {
		unsigned n = (unsigned)__builtin_popcountll(pol->nodes);
		return nth_bit(pol->nodes, (*rotor)++ % n);
	}
	int best = -1;
	for (uint64_t m = pol->nodes; m; m &= m - 1) {
		int i = __builtin_ctzll(m);
		if (best < 0 || topo->node[home].distance[i] < topo->node[home].distance[best])
			best = i;
	}
	return best;
}

uint64_t np_node_target_near(const struct np_topo_policy *pol, int target)
{
	return pol && pol->mode == NP_POLICY_INTERLEAVE && pol->nodes ? pol->nodes : near[target];
}

/* ---- Room ------------------------------------------------------------------------------ */

static long in_use(int node)
{
	return np_vmstat_read(node, NUMA_PAGE_STAT_pages_in_use);
}

void np_node_note_full(int node)
{
	struct room *r = &room[node];
	__atomic_store_n(&r->avail, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->in_use_at, in_use(node), __ATOMIC_RELAXED);
	__atomic_store_n(&r->read_at, np_os_clock_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&r->skip, ROOM_SKIP, __ATOMIC_RELAXED);
	__atomic_store_n(&r->known, true, __ATOMIC_RELAXED);
}

/* The kernel's node reclaim (zone_reclaim_mode's bits): RECLAIM_WRITE writes dirty pages
 * out, RECLAIM_UNMAP unmaps mapped ones; without them it takes clean unmapped page cache only,
 * and it leaves min_unmapped_ratio (1% by default) of the node alone. */
#define RECLAIM_WRITE 2
#define RECLAIM_UNMAP 4
#define RECLAIM_LEAVES_DIV 100

/* Reads the node's available memory again, for a question of `pages` pages. False when it
 * cannot be read (no room check). */
static bool reread(int node, size_t pages)
{
	/* On a machine of one memory node its free memory is the kernel's free memory: one
	 * sysinfo, where the node's meminfo took 14 us to read at every process start (the
	 * kernel formats thirty lines; docs/perf-issue15.md, section 49).
	 * Where sysinfo is refused (a seccomp filter), the node's file as before. */
	struct np_os_node_mem m = {0};
	bool whole = node == only_memory_node && np_os_mem_free(&m.free) == 0;
	if (!whole && np_os_node_avail(topo->node[node].os_id, &m) < 0)
		return false;
	/* Inactive file pages make room for our pages only where the kernel reclaims a node's
	 * own memory first (zone_reclaim_mode, any of its bits): by default a page that prefers
	 * a node at its low watermark goes to the next node with free memory, file pages or not
	 * (the kernel's get_page_from_freelist), so only free memory counts; counted, they made
	 * the library hand out fresh pages of a node of page cache, which faulted in elsewhere.
	 * Where it does reclaim, only what node reclaim may take counts. Under strict binding a
	 * node whose file pages are in use (the running programs' own) leaves the kernel nothing
	 * to reclaim but to kill: only free memory counts there either. The setting is read only
	 * where it can change an answer: while free memory alone leaves the node's reserve, the
	 * question, the low mark (np_pool_set_low) and what np_node_has_room lets the library take
	 * before it reads again (an eighth of the read, or a chunk) all free, file pages change
	 * none of them (5 us a read, at every process start before; without that last term, a
	 * review saw a node of 4 GiB of page cache marked low). */
	uint64_t file = 0;
	size_t free_pages_now = (size_t)(m.free >> NP_PAGE_SHIFT), reserve = reserve_of(node);
	bool short_of_free = free_pages_now < reserve + NP_MAX(pages, LOW_RESERVES * reserve) +
						      NP_MAX(free_pages_now / 8, (size_t)NP_CHUNK_PAGES);
	int mode = !short_of_free || np_opt_load(bind) == NP_BIND_STRICT ? 0 : np_os_node_reclaim_mode();
	if ((mode & 7) && whole && np_os_node_avail(topo->node[node].os_id, &m) < 0)
		mode = 0; /* the file pages unknown: free memory only */
	if (mode & 7) {
		file = m.inactive_file;
		uint64_t held = (mode & RECLAIM_UNMAP ? 0 : m.mapped) + (mode & RECLAIM_WRITE ? 0 : m.dirty) +
				(node_pages[node] << NP_PAGE_SHIFT) / RECLAIM_LEAVES_DIV;
		file = file > held ? file - held : 0;
	}
	uint64_t bytes = m.free + file;
	struct room *r = &room[node];
	__atomic_store_n(&r->avail, (size_t)(bytes >> NP_PAGE_SHIFT), __ATOMIC_RELAXED);
	__atomic_store_n(&r->in_use_at, in_use(node), __ATOMIC_RELAXED);
	__atomic_store_n(&r->read_at, np_os_clock_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&r->known, true, __ATOMIC_RELAXED);
	return true;
}

/* Pages of the node's memory left, as far as we know, above its reserve. */
static long left(int node)
{
	struct room *r = &room[node];
	long used = in_use(node) - __atomic_load_n(&r->in_use_at, __ATOMIC_RELAXED);
	return (long)__atomic_load_n(&r->avail, __ATOMIC_RELAXED) - (used > 0 ? used : 0) - (long)reserve_of(node);
}

/* In a rehearsal the node's memory is its fixture size and pages_in_use all it holds of it: its
 * pool's free pages are no more of it (the pool grows a whole chunk past the size at the last
 * room check, on this machine's memory), so a node without room serves nothing, free pages
 * included, until no allowed node has room (the walk's second round). On this machine a full
 * node's pool holds pages the kernel has already counted as taken: they serve first. */
static bool rehearsed(void)
{
	return !topo->is_system;
}

bool np_node_can_serve(int node, size_t pages)
{
	if (rehearsed())
		return np_node_has_room(node, pages);
	return np_pools[node].exists && (free_pages(node) >= pages || np_node_has_room(node, pages));
}

bool np_node_has_room(int node, size_t pages)
{
	const struct np_pool *p = &np_pools[node];
	if (!p->exists)
		return false;
	if (np_pool_take_spill(node))
		np_node_note_full(node);
	if (rehearsed()) /* the fixture's size, against what the node holds */
		return in_use(node) + (long)pages <= (long)p->limit_pages;
	struct room *r = &room[node];
	if (!__atomic_load_n(&r->known, __ATOMIC_RELAXED) && !reread(node, pages))
		return true; /* nothing to go by (no /sys): as before, the kernel decides */
	long have = left(node);
	size_t avail = __atomic_load_n(&r->avail, __ATOMIC_RELAXED);
	long used = in_use(node) - __atomic_load_n(&r->in_use_at, __ATOMIC_RELAXED);
	/* Read again once we have eaten an eighth of what was there or given as much back (a
	 * free, then a trim or a purge: a node found full has room again, and the skip count
	 * below sent the next blocks elsewhere for 64 questions), or the read is ROOM_MAX_AGE_NS
	 * old (others use the node too), or when it looks too full, unless a recent read said
	 * it is. */
	long moved = (long)NP_MAX(avail / 8, (size_t)NP_CHUNK_PAGES);
	bool stale = used > moved || used < -moved ||
		     np_os_clock_ns() - __atomic_load_n(&r->read_at, __ATOMIC_RELAXED) > ROOM_MAX_AGE_NS;
	if (stale || have < (long)pages) {
		unsigned skip = __atomic_load_n(&r->skip, __ATOMIC_RELAXED);
		if (!stale && skip) {
			__atomic_store_n(&r->skip, skip - 1, __ATOMIC_RELAXED);
			return false;
		}
		if (reread(node, pages))
			have = left(node);
		__atomic_store_n(&r->skip, have < (long)pages ? ROOM_SKIP : 0, __ATOMIC_RELAXED);
	}
	np_pool_set_low(node, have < (long)(LOW_RESERVES * reserve_of(node)));
	return have >= (long)pages;
}

/* ---- The walk -------------------------------------------------------------------------- */

int np_node_walk(const struct np_node_req *r, np_node_try_fn try, void *arg)
{
	uint64_t allowed = r->only ? r->only : ~0ULL, tried = 0, grew = 0;
	/* With one memory node there is nowhere else to go: its fresh memory serves at once, not
	 * after a first round that takes only resident pages and fails (a review's point). */
	bool alone = topo->nmem_nodes == 1;
	const struct np_topo_node *nd = &topo->node[r->intended];
	for (int round = 0; round < (r->flags & NP_WALK_ROOM_ONLY ? 1 : 2); round++) {
		/* Round 0: every node once, growing only where there is room; round 1: the nodes
		 * that could not grow, growing now. */
		if ((r->flags & NP_WALK_PICK) && round == 0) {
			bool shared;
			int first = np_node_pick(r->intended, r->rotor, r->pages, &shared);
			if ((allowed >> first) & 1) {
				bool grow = np_node_has_room(first, r->pages) || alone;
				if ((grow || !rehearsed()) && try(first, shared, grow, arg))
					return first;
				tried |= 1ULL << first;
				grew |= (uint64_t)grow << first;
			}
		}
		/* An interleave's full node is passed over to the next of its set: the set's
		 * nodes first (pass 0), the others after (pass 1). */
		for (int pass = r->prefer ? 0 : 1; pass < 2; pass++) {
			uint64_t these = pass == 0 ? r->prefer : r->prefer ? ~r->prefer : ~0ULL;
			for (int k = 0; k < nd->nfallback; k++) {
				int n = nd->fallback[k];
				if (!((allowed & these) >> n & 1) ||
				    ((tried >> n) & 1 && (round == 0 || (grew >> n) & 1)))
					continue;
				bool grow = round == 1 || np_node_has_room(n, r->pages) || alone;
				tried |= 1ULL << n;
				grew |= (uint64_t)grow << n;
				if ((grow || !rehearsed()) && try(n, false, grow, arg)) /* np_node_can_serve */
					return n;
			}
		}
	}
	return -1;
}
