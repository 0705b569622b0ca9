/* Unit tests of src/options.c: defaults, parsing, rejection of bad values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>

#include "options.h"

static int reset(void **state)
{
	(void)state;
	np_options_reset();
	return 0;
}

static void defaults(void **state)
{
	(void)state;
	assert_int_equal(np_opt.verbose, 0);
	assert_null(np_opt.topology);
	assert_int_equal(np_opt.stat_threshold, -1);
	assert_int_equal(np_opt.purge_mb, 64);
	assert_int_equal(np_opt.bind, NP_BIND_PREFERRED);
	assert_int_equal(np_opt.place, NP_PLACE_NONE);
}

static void parses_values(void **state)
{
	(void)state;
	assert_int_equal(np_options_set("STAT_THRESHOLD", "0"), 0);
	assert_int_equal(np_opt.stat_threshold, 0);
	assert_int_equal(np_options_set("INTERLEAVE_ABOVE", "16M"), 0);
	assert_int_equal(np_opt.interleave_above, 16L << 20);
	assert_int_equal(np_options_set("BIND", "strict"), 0);
	assert_int_equal(np_opt.bind, NP_BIND_STRICT);
	assert_int_equal(np_options_set("PLACE", "fill"), 0);
	assert_int_equal(np_opt.place, NP_PLACE_FILL);
	assert_int_equal(np_options_set("TOPOLOGY", "synthetic:node:2 pu:2"), 0);
	assert_string_equal(np_opt.topology, "synthetic:node:2 pu:2");
}

static void rejects_bad_values_and_keeps_default(void **state)
{
	(void)state;
	assert_int_equal(np_options_set("STAT_THRESHOLD", "126"), -1);
	assert_int_equal(np_opt.stat_threshold, -1);
	assert_int_equal(np_options_set("STAT_THRESHOLD", "12x"), -1);
	assert_int_equal(np_opt.stat_threshold, -1);
	assert_int_equal(np_options_set("BIND", "sometimes"), -1);
	assert_int_equal(np_opt.bind, NP_BIND_PREFERRED);
	assert_int_equal(np_options_set("VERBOSE", "2"), -1);
	assert_int_equal(np_options_set("NO_SUCH_OPTION", "1"), -1);
}

static void table_is_documented(void **state)
{
	(void)state;
	int n = 0;
	for (const struct np_option_doc *d = np_options_table(); d->name; d++, n++) {
		assert_non_null(d->deflt);
		assert_true(d->doc && d->doc[0]);
	}
	assert_true(n >= 10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(defaults, reset),
		cmocka_unit_test_setup(parses_values, reset),
		cmocka_unit_test_setup(rejects_bad_values_and_keeps_default, reset),
		cmocka_unit_test_setup(table_is_documented, reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
