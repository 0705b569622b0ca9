/*
 * npbench_glibc — the C library's own malloc, exported under the malloc names, for programs that
 * link another allocator: Debian's redis-server links libjemalloc.so.2, so without this shim its
 * "glibc" run would measure jemalloc. Preloaded, these definitions come first in the global scope
 * and forward to glibc's __libc_* entry points (or, for names glibc exports only as weak public
 * symbols, to glibc's own definitions found through its handle).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

#define SHIM_API __attribute__((visibility("default")))

SHIM_API size_t malloc_usable_size(void *p);

static size_t (*libc_usable_size)(void *);

/* glibc's malloc_usable_size: looked up in libc's own scope, as the global one is ours. */
__attribute__((constructor)) static void shim_init(void)
{
	static const char msg[] = "npbench_glibc: cannot find glibc's malloc_usable_size\n";
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	if (libc)
		libc_usable_size = (size_t(*)(void *))dlsym(libc, "malloc_usable_size");
	if (!libc_usable_size || libc_usable_size == malloc_usable_size) {
		if (write(2, msg, sizeof msg - 1) < 0)
			abort();
		abort();
	}
}

SHIM_API void *malloc(size_t n)
{
	return __libc_malloc(n);
}

SHIM_API void free(void *p)
{
	__libc_free(p);
}

SHIM_API void *calloc(size_t n, size_t s)
{
	return __libc_calloc(n, s);
}

SHIM_API void *realloc(void *p, size_t n)
{
	return __libc_realloc(p, n);
}

SHIM_API void *memalign(size_t a, size_t n)
{
	return __libc_memalign(a, n);
}

SHIM_API void *aligned_alloc(size_t a, size_t n)
{
	return __libc_memalign(a, n);
}

SHIM_API void *valloc(size_t n)
{
	return __libc_valloc(n);
}

SHIM_API void *pvalloc(size_t n)
{
	return __libc_pvalloc(n);
}

SHIM_API int posix_memalign(void **out, size_t a, size_t n)
{
	if (a < sizeof(void *) || (a & (a - 1)))
		return EINVAL;
	int saved = errno;
	void *p = __libc_memalign(a, n);
	if (!p)
		return ENOMEM;
	errno = saved;
	*out = p;
	return 0;
}

SHIM_API size_t malloc_usable_size(void *p)
{
	if (!libc_usable_size)
		shim_init();
	return p ? libc_usable_size(p) : 0;
}
