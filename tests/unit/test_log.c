/* Unit tests of src/log.c: the non-allocating formatter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "log.h"

static void formats_integers(void **state)
{
	(void)state;
	char buf[128];
	np_format(buf, sizeof buf, "%d %i %u %ld %lu %lld %llu", -42, 7, 3000000000u, -1L, 2UL, -9LL, 18446744073709551615ULL);
	assert_string_equal(buf, "-42 7 3000000000 -1 2 -9 18446744073709551615");
	np_format(buf, sizeof buf, "%zu %zd %x %lx", (size_t)12345, (ssize_t)-5, 255u, 0xdeadbeefUL);
	assert_string_equal(buf, "12345 -5 ff deadbeef");
}

static void formats_width_and_flags(void **state)
{
	(void)state;
	char buf[128];
	np_format(buf, sizeof buf, "[%5d][%-5d][%05d][%-4s][%4s]", 42, 42, -42, "ab", "ab");
	assert_string_equal(buf, "[   42][42   ][-0042][ab  ][  ab]");
}

static void formats_strings_pointers(void **state)
{
	(void)state;
	char buf[128];
	np_format(buf, sizeof buf, "%s %c %p %% %s", "x", 'y', (void *)0x1000, (char *)NULL);
	assert_string_equal(buf, "x y 0x1000 % (null)");
}

static void truncates_safely(void **state)
{
	(void)state;
	char buf[8];
	size_t n = np_format(buf, sizeof buf, "%s", "0123456789");
	assert_int_equal(n, 7);
	assert_string_equal(buf, "0123456");
	memset(buf, 'z', sizeof buf);
	np_format(buf, 1, "abc");
	assert_int_equal(buf[0], '\0');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(formats_integers),
		cmocka_unit_test(formats_width_and_flags),
		cmocka_unit_test(formats_strings_pointers),
		cmocka_unit_test(truncates_safely),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
