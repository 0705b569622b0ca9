/*
 * background.c — the opt-in background thread (see background.h).
 */
#include "malloc/background.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "os.h"
#include "pool/pool.h"

__thread bool np_background_creating;

enum { NONE, RUNNING, FAILED };
static int state; /* relaxed/acq-rel atomic: NONE, RUNNING or FAILED (not tried again) */

/* It wakes twice a decay period, at least every 500 ms (the huge caches' peak halves once a
 * second, DECAY_MS=0 included) and at most every 10 ms. */
#define WAKE_MIN_MS 10
#define WAKE_MAX_MS 500

static long wake_ms(void)
{
	long d = np_opt_load(decay_ms);
	long w = d ? d / 2 : WAKE_MAX_MS;
	return w < WAKE_MIN_MS ? WAKE_MIN_MS : w > WAKE_MAX_MS ? WAKE_MAX_MS : w;
}

static void *run(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "numapage-bg");
	for (;;) {
		while (np_opt_load(background_thread)) {
			np_os_sleep_ns(wake_ms() * 1000000L);
			np_pool_decay(NULL);
		}
		/* Off: this thread ends, unless the option came on again after the load above
		 * and its set found this thread still running (and so started none). */
		__atomic_store_n(&state, NONE, __ATOMIC_RELEASE);
		int expect = NONE;
		if (!np_opt_load(background_thread) ||
		    !__atomic_compare_exchange_n(&state, &expect, RUNNING, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return NULL;
	}
}

void np_background_start(void)
{
	int expect = NONE;
	if (!np_opt_load(background_thread) ||
	    !__atomic_compare_exchange_n(&state, &expect, RUNNING, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc == 0) {
		/* The default stack size: the C library takes the static TLS out of the stack, so a
		 * small fixed one failed in a program with 300 KiB of it (a review's). */
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		/* Created with every signal blocked, so that none of the program's is ever run on
		 * it; the creator's mask is restored at once. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		np_background_creating = true;
		pthread_t t;
		rc = pthread_create(&t, &attr, run, NULL);
		np_background_creating = false;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	if (rc != 0) {
		__atomic_store_n(&state, FAILED, __ATOMIC_RELEASE);
		np_warn("NUMAPAGE_BACKGROUND_THREAD: the thread could not be created (%s); freed memory "
			"goes back only at the program's own allocator calls", strerrordesc_np(rc) ? strerrordesc_np(rc) : "?");
	}
}

void np_background_option_set(const char *name)
{
	if (strcmp(name, "BACKGROUND_THREAD") != 0)
		return;
	/* Asked again: a creation that failed (a passing EAGAIN) is tried once more. */
	int expect = FAILED;
	__atomic_compare_exchange_n(&state, &expect, NONE, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	np_background_start();
}

NP_FORK_CHILD void np_background_atfork_child(void)
{
	/* The C library has made its own locks new in the child before its fork handlers run:
	 * creating a thread here waits for nothing. posix_spawn and vfork run no handlers. A
	 * parent whose creation failed has a child that does not try (nor warn) again. */
	if (__atomic_load_n(&state, __ATOMIC_RELAXED) == FAILED)
		return;
	NP_RESET(&state, NONE);
	if (np_opt_load(background_thread)) /* asked here: np_background_start's text is hot */
		np_background_start();
}
