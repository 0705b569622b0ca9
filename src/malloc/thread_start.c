/*
 * thread_start.c — pthread_create, wrapped (shared library only), so that with a placement
 * policy on (NUMAPAGE_PLACE, numa_page_thread_place) a new thread is placed when it starts,
 * before its start routine runs: the Linux 2.5 NUMA scheduler's balancing of new tasks at
 * exec, for threads. The wrapper knows what the first allocation of a thread cannot: whether
 * the program chose the thread's CPUs (an affinity in its attributes: left alone), or the
 * thread merely inherited its creator's mask (placed again: otherwise every thread of a
 * placed main thread would look pinned and pile onto its node), and a thread whose attributes
 * pin it is marked so that it is never placed. With no policy, or before the allocator is
 * ready, it is a plain call to the C library's pthread_create.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "malloc/alloc.h"
#include "malloc/init.h"
#include "malloc/place.h"
#include "malloc/thread.h"
#include "options.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static create_fn real_create;

struct start {
	void *(*fn)(void *);
	void *arg;
	bool pinned; /* the attributes carried an affinity */
};

static void *trampoline(void *p)
{
	struct start s = *(struct start *)p;
	if (s.pinned) {
		/* The program chose its CPUs: never placed, whatever its mask looks like (under
		 * `taskset -c 0`, a thread pinned to CPU 0 has the mask it would have inherited). */
		np_tls.pinned_at_start = true;
	} else {
		/* Before anything else gives this thread its state (even the free below would):
		 * the thread is placed whatever mask it inherited. */
		np_tls.place_at_start = true;
		np_thread_get();
		np_tls.place_at_start = false;
	}
	np_free_fast(p);
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
	if (!np_is_ready() || np_place_policy() == NP_PLACE_NONE)
		return real(thread, attr, fn, arg);
	struct start *s = np_malloc_fast(sizeof *s);
	if (!s)
		return real(thread, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	s->pinned = attr_pins(attr);
	int rc = real(thread, attr, trampoline, s);
	if (rc != 0)
		np_free_fast(s);
	return rc;
}
