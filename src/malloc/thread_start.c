/*
 * thread_start.c — pthread_create, wrapped (shared library only), so that with a placement
 * policy on (NUMAPAGE_PLACE, numa_page_thread_place) a new thread is placed when it starts,
 * before its start routine runs: the Linux 2.5 NUMA scheduler's balancing of new tasks at
 * exec, for threads. The wrapper knows what the first allocation of a thread cannot:
 *   - whether the program chose the thread's CPUs: an affinity in its attributes, or a mask it
 *     inherited from a creator whose mask the program set (np_place_mask_chosen): left alone.
 *     A thread that inherited a mask placement gave its creator, or the process's own, is
 *     placed again (otherwise every thread of a placed main thread would look pinned and pile
 *     onto its node);
 *   - whether placement was on when the thread was created: a thread created while it was off
 *     is never placed, also when the program turns it on before the thread's first allocation
 *     (the policy is for "threads created from now on");
 *   - whether the mask it inherits is one placement gave its creator (np_tls.placed_mask, passed
 *     on to the new thread while the mask is unchanged), so that its own threads are placed.
 * Before the allocator is ready it is a plain call to the C library's pthread_create; such a
 * thread is judged at its first allocation, as every thread of a static link is.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "malloc/alloc.h"
#include "malloc/background.h"
#include "malloc/bootstrap.h"
#include "malloc/init.h"
#include "malloc/place.h"
#include "malloc/thread.h"
#include "options.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn real_create;

struct start {
	void *(*fn)(void *);
	void *arg;
	bool place;          /* placement was on, and the program did not choose the thread's CPUs */
	uint8_t placed_mask; /* the creator's mask, which it inherits, is the CPUs placement gave
				node placed_mask - 1 (0: it is not) */
};

static void *trampoline(void *p)
{
	struct start s = *(struct start *)p;
	/* Passed on: a thread it creates in turn then knows the mask for placement's too (a thread
	 * created while placement was off would otherwise make every later one look pinned). */
	np_tls.placed_mask = s.placed_mask;
	if (!s.place) {
		/* The program chose its CPUs (under `taskset -c 0`, a thread pinned to CPU 0 has the
		 * mask it would have inherited), or placement was off when it was created. */
		np_tls.never_place = true;
	} else {
		/* Before anything else gives this thread its state (even the free below would):
		 * the thread is placed whatever mask it inherited. */
		np_tls.place_at_start = true;
		np_thread_get();
		np_tls.place_at_start = false;
		/* Its policy was read before its start routine could set one (even by a raw system
		 * call): read again at its first slow path, as an unplaced thread's first is. */
		np_tls.policy_set = true;
	}
	np_bootstrap_free(p);
	return s.fn(s.arg);
}

/* True when the attributes carry an affinity (glibc reports every CPU when they do not). */
static bool attr_pins(const pthread_attr_t *attr)
{
	cpu_set_t set;
	return attr && pthread_attr_getaffinity_np(attr, sizeof set, &set) == 0 && CPU_COUNT(&set) < CPU_SETSIZE;
}

__attribute__((visibility("default"))) int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
							  void *(*fn)(void *), void *arg)
{
	create_fn real = __atomic_load_n(&real_create, __ATOMIC_ACQUIRE);
	if (NP_UNLIKELY(!real)) {
		real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (!real)
			return EAGAIN;
		__atomic_store_n(&real_create, real, __ATOMIC_RELEASE);
	}
	if (!np_is_ready() || np_background_creating) /* the library's own thread: left alone */
		return real(thread, attr, fn, arg);
	/* Internal memory, not the program's: counted in no statistics of its mallocs. */
	struct start *s = np_bootstrap_alloc(sizeof *s, _Alignof(struct start));
	if (!s)
		return real(thread, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	/* The creator's mask, which the new thread inherits unless its attributes set one: a
	 * system call, only while placement is on or gave the creator its mask. */
	bool pins = attr_pins(attr), on = np_place_policy() != NP_PLACE_NONE;
	bool chosen = pins || ((on || np_tls.placed_mask) && np_place_mask_chosen((int)np_tls.placed_mask - 1));
	s->place = on && !pins && !chosen;
	s->placed_mask = !chosen ? np_tls.placed_mask : 0;
	int rc = real(thread, attr, trampoline, s);
	if (rc != 0)
		np_bootstrap_free(s);
	return rc;
}
