/*
 * dlclose_thread.c — dlopen()s libnumapage (argv[1]), lets a thread allocate through it, closes
 * the library while that thread lives, then lets the thread exit: its exit destructor (the
 * library's pthread key) and its blocks' frees must still find the library mapped (issue 13:
 * it crashed at the thread's exit). Exit status 0 when the thread ended cleanly.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *(*np_malloc)(size_t);
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready, allocated, closed;

static void *worker(void *arg)
{
	(void)arg;
	void *keep[64];
	for (int i = 0; i < 64; i++)
		keep[i] = np_malloc((size_t)16 << (i % 12));
	pthread_mutex_lock(&m);
	allocated = keep[0] && keep[63];
	ready = 1;
	pthread_cond_broadcast(&cv);
	while (!closed)
		pthread_cond_wait(&cv, &m);
	pthread_mutex_unlock(&m);
	return NULL; /* the library's thread-exit destructor runs now */
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s LIBNUMAPAGE.so\n", argv[0]);
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	np_malloc = (void *(*)(size_t))dlsym(h, "numa_page_malloc");
	if (!np_malloc)
		return 2;
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL))
		return 2;
	pthread_mutex_lock(&m);
	while (!ready)
		pthread_cond_wait(&cv, &m);
	pthread_mutex_unlock(&m);
	if (!allocated) {
		fprintf(stderr, "numa_page_malloc failed\n");
		return 1;
	}
	if (dlclose(h)) {
		fprintf(stderr, "dlclose: %s\n", dlerror());
		return 1;
	}
	pthread_mutex_lock(&m);
	closed = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&m);
	pthread_join(t, NULL);
	printf("the thread outlived dlclose cleanly\n");
	return 0;
}
