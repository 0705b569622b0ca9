/* Unit tests of src/options.c: defaults, parsing, rejection of bad values, NUMAPAGE_CONF and
 * its precedence, unknown names, secure execution, values and sources for `numapage options`,
 * and string values that outlive the environment they came from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numapage.h"
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

/* Negative numbers: the documented -1 of stat_threshold, and those out of an option's range.
 * They were shifted by their suffix's power before the range check, even by 0: undefined
 * behaviour, which the UBSan build (halt_on_error) turned into an exit at start-up under
 * NUMAPAGE_STAT_THRESHOLD=-1 (found by a hostile review). */
static void negative_values_parse(void **state)
{
	(void)state;
	assert_int_equal(np_options_set("STAT_THRESHOLD", "5"), 0);
	assert_int_equal(np_options_set("STAT_THRESHOLD", "-1"), 0);
	assert_int_equal(np_opt.stat_threshold, -1);
	assert_int_equal(np_options_set("DECAY_MS", "-1"), -1);
	assert_int_equal(np_options_set("DECAY_MS", "-1k"), -1);
	assert_int_equal(np_options_set("DECAY_MS", "-8589934591g"), -1);
	assert_int_equal(np_options_set("INTERLEAVE_ABOVE", "-1m"), -1);
	assert_int_equal(np_opt.decay_ms, 10000);
	assert_int_equal(np_options_set("STAT_THRESHOLD", "-2"), -1);
	assert_int_equal(np_opt.stat_threshold, -1);
}

/* Whitespace after a number is skipped as strtol skips it before one: a value read from a
 * file keeps its newline ("5\n" was refused while "\n5" was taken). */
static void whitespace_around_numbers(void **state)
{
	(void)state;
	assert_int_equal(np_options_set("PCP_BATCH", "\n12\n"), 0);
	assert_int_equal(np_opt.pcp_batch, 12);
	assert_int_equal(np_options_set("PCP_BATCH", " 16 \t\r\n"), 0);
	assert_int_equal(np_opt.pcp_batch, 16);
	assert_int_equal(np_options_set("PCP_BATCH", "16\n1"), -1);
	assert_int_equal(np_opt.pcp_batch, 16);
	/* A success leaves errno alone (the number's parse cleared it: a review of the contract). */
	errno = EDOM;
	assert_int_equal(np_options_set("PCP_BATCH", "8"), 0);
	assert_int_equal(errno, EDOM);
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
	/* A pid is a plain number: "4k" named process 4096 (a review of the keeper). */
	assert_int_equal(np_options_set("SHM_KEEPER", "4k"), -1);
	assert_int_equal(np_opt.shm_keeper, 0);
	assert_int_equal(np_options_set("SHM_KEEPER", "4096"), 0);
	assert_int_equal(np_opt.shm_keeper, 4096);
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

/* Runs np_options_load on env with stderr captured into out (the warnings). */
static void load_capturing(char *const *env, bool secure, char *out, size_t size)
{
	char path[] = "/tmp/np_options_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	int saved = dup(2);
	dup2(fd, 2);
	np_options_load(env, secure);
	dup2(saved, 2);
	close(saved);
	ssize_t n = pread(fd, out, size - 1, 0);
	out[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
}

static const char *value(const char *name)
{
	static char buf[256];
	np_options_value(np_options_find(name), buf, sizeof buf);
	return buf;
}

static void conf_string_and_precedence(void **state)
{
	(void)state;
	char *env[] = {"HOME=/root", "NUMAPAGE_PCP_BATCH=8",
		       "NUMAPAGE_CONF=bind=strict,place=spread,stats=json:/tmp/r.%p.json,PCP_BATCH=16,"
		       "NUMAPAGE_PURGE_MB=32,topology=synthetic:pack:2 [numa(memory=1073741824)] pu:2",
		       NULL};
	char err[2048];
	load_capturing(env, false, err, sizeof err);
	assert_string_equal(err, "");
	assert_int_equal(np_opt.bind, NP_BIND_STRICT);
	assert_int_equal(np_opt.place, NP_PLACE_SPREAD);
	assert_string_equal(np_opt.stats, "json:/tmp/r.%p.json");
	assert_int_equal(np_opt.purge_mb, 32); /* keys with the prefix, in any case */
	assert_string_equal(np_opt.topology, "synthetic:pack:2 [numa(memory=1073741824)] pu:2");
	/* Its own variable wins over the string, wherever each stands in the environment. */
	assert_int_equal(np_opt.pcp_batch, 8);
	assert_int_equal(np_options_source(np_options_find("pcp_batch")), NP_OPTION_ENV);
	assert_int_equal(np_options_source(np_options_find("bind")), NP_OPTION_CONF);
	assert_int_equal(np_options_source(np_options_find("shm")), NP_OPTION_DEFAULT);
	assert_string_equal(value("bind"), "strict");
	assert_string_equal(value("NUMAPAGE_PLACE"), "spread");
	assert_string_equal(value("shm"), "1");
	assert_string_equal(np_options_source_name(NP_OPTION_CONF), "NUMAPAGE_CONF");
}

/* Empty items (a doubled, leading or trailing comma, as shell scripts build the string) are no
 * mistake: nothing is said about them, and the items around them apply. */
static void conf_string_empty_items_are_skipped(void **state)
{
	(void)state;
	char *env[] = {"NUMAPAGE_CONF=,bind=strict,,,place=spread,", NULL};
	char err[2048];
	load_capturing(env, false, err, sizeof err);
	assert_string_equal(err, "");
	assert_int_equal(np_opt.bind, NP_BIND_STRICT);
	assert_int_equal(np_opt.place, NP_PLACE_SPREAD);
}

/* Spaces around names and values are no mistake ("bind=strict, stats=1", as people write
 * lists), nor a number's trailing space (a leading one always passed) or an enum value's case
 * (names are case-blind too): a review found ' stats' rejected as an unknown name, so stats
 * stayed off, and "5 " refused where " 5" was taken. */
static void spaces_and_value_case_are_forgiven(void **state)
{
	(void)state;
	char *env[] = {"NUMAPAGE_CONF=bind = Strict, stats=1 ,\tpcp_batch= 16 ", "NUMAPAGE_PURGE_MB=32 ", NULL};
	char err[2048];
	load_capturing(env, false, err, sizeof err);
	assert_string_equal(err, "");
	assert_int_equal(np_opt.bind, NP_BIND_STRICT);
	assert_string_equal(np_opt.stats, "1");
	assert_int_equal(np_opt.pcp_batch, 16);
	assert_int_equal(np_opt.purge_mb, 32);
}

static void unknown_names_warn_once_with_a_suggestion(void **state)
{
	(void)state;
	char *env[] = {"NUMAPAGE_STAS=1", "NUMAPAGE_LIB=/x.so", "NUMAPAGE_CONF=plac=spread,bind,verbose=2",
		       "NUMAPAGE_ZZZZZZZZ=1", "NUMAPAGE_BIND=sometimes", NULL};
	char err[4096];
	load_capturing(env, false, err, sizeof err);
	assert_non_null(strstr(err, "NUMAPAGE_STAS is not a libnumapage option (did you mean NUMAPAGE_STATS?)"));
	assert_non_null(strstr(err, "NUMAPAGE_CONF: 'plac' is not a libnumapage option (did you mean PLACE?)"));
	assert_non_null(strstr(err, "NUMAPAGE_CONF: 'bind' is not name=value"));
	assert_non_null(strstr(err, "NUMAPAGE_CONF: VERBOSE=2 is not valid (0 or 1); keeping 0"));
	assert_non_null(strstr(err, "NUMAPAGE_BIND=sometimes is not valid (preferred, strict or none); keeping preferred"));
	/* Far from every option: no suggestion. NUMAPAGE_LIB is the command's: no warning. */
	assert_non_null(strstr(err, "NUMAPAGE_ZZZZZZZZ is not a libnumapage option; ignored"));
	assert_null(strstr(err, "NUMAPAGE_LIB"));
	const char *p = strstr(err, "NUMAPAGE_STAS");
	assert_null(strstr(p + 1, "NUMAPAGE_STAS"));
	assert_int_equal(np_opt.place, NP_PLACE_NONE);
}

/* A value, name or item from the environment is shown with its control bytes as \xNN: each
 * warning is one line, and a value cannot forge lines of the program's stderr or send the
 * terminal escapes (a rejected "16\n1" printed two lines). */
static void warnings_show_control_bytes_escaped(void **state)
{
	(void)state;
	char *env[] = {"NUMAPAGE_PCP_BATCH=16\n1", "NUMAPAGE_CONF=bind=\x1b[2Jx,junk\nline",
		       "NUMAPAGE_BO\aGUS=1", NULL};
	char err[4096];
	load_capturing(env, false, err, sizeof err);
	assert_non_null(strstr(err, "NUMAPAGE_PCP_BATCH=16\\x0a1 is not valid"));
	assert_non_null(strstr(err, "NUMAPAGE_CONF: BIND=\\x1b[2Jx is not valid"));
	assert_non_null(strstr(err, "NUMAPAGE_CONF: 'junk\\x0aline' is not name=value"));
	assert_non_null(strstr(err, "NUMAPAGE_BO\\x07GUS is not a libnumapage option"));
	int lines = 0;
	for (const char *c = err; *c; c++) {
		lines += *c == '\n';
		assert_true((unsigned char)*c >= 0x20 || *c == '\n');
	}
	assert_int_equal(lines, 4);
}

/* NUMAPAGE_CONF takes names with or without the prefix: a misspelt one gets the closest
 * option's name either way, written as the user wrote it (the prefix is not counted as edits). */
static void unknown_conf_name_with_prefix_gets_a_suggestion(void **state)
{
	(void)state;
	char *env[] = {"NUMAPAGE_CONF=NUMAPAGE_STAS=1,numapage_plac=spread,NUMAPAGE_ZZZZZZZZ=1", NULL};
	char err[4096];
	load_capturing(env, false, err, sizeof err);
	assert_non_null(strstr(err, "NUMAPAGE_CONF: 'NUMAPAGE_STAS' is not a libnumapage option "
				    "(did you mean NUMAPAGE_STATS?); ignored"));
	assert_non_null(strstr(err, "NUMAPAGE_CONF: 'numapage_plac' is not a libnumapage option "
				    "(did you mean NUMAPAGE_PLACE?); ignored"));
	assert_non_null(strstr(err, "NUMAPAGE_CONF: 'NUMAPAGE_ZZZZZZZZ' is not a libnumapage option; ignored"));
	assert_null(np_opt.stats);
	assert_int_equal(np_opt.place, NP_PLACE_NONE);
}

static void secure_execution_reads_nothing(void **state)
{
	(void)state;
	char *env[] = {"NUMAPAGE_BIND=none", "NUMAPAGE_CONF=stats=1,verbose=1", "NUMAPAGE_STAS=1", NULL};
	char err[1024];
	load_capturing(env, true, err, sizeof err);
	assert_string_equal(err, "");
	assert_int_equal(np_opt.bind, NP_BIND_PREFERRED);
	assert_null(np_opt.stats);
	assert_int_equal(np_opt.verbose, 0);
}

/* NUMAPAGE_STATS takes 0, 1 or json:<path>: anything else is refused where it is set (the
 * environment warns, numa_page_option_set answers EINVAL), not found out at exit, when the
 * report it asked for silently does not come. */
static void stats_takes_only_its_forms(void **state)
{
	(void)state;
	const char *bad[] = {"garbage", "2", "json:", "json", "1x", "table"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(np_options_set("STATS", bad[i]), -1);
		assert_null(np_opt.stats);
	}
	assert_int_equal(np_options_set("STATS", "json:/tmp/s.json"), 0);
	assert_string_equal(np_opt.stats, "json:/tmp/s.json");
	assert_int_equal(np_options_set("STATS", "1"), 0);
	assert_string_equal(np_opt.stats, "1");
	assert_int_equal(np_options_set("STATS", "0"), 0);
	assert_int_equal(np_options_stats_kind(np_opt.stats), NP_STATS_NONE);
	assert_int_equal(np_options_stats_kind("1"), NP_STATS_TABLE);
	assert_int_equal(np_options_stats_kind("json:x"), NP_STATS_JSON);
	assert_int_equal(np_options_stats_kind(NULL), NP_STATS_NONE);
	assert_int_equal(np_options_stats_kind("json:"), -1);
	char *env[] = {"NUMAPAGE_STATS=garbage", NULL};
	char err[1024];
	np_options_reset();
	load_capturing(env, false, err, sizeof err);
	assert_non_null(strstr(err, "NUMAPAGE_STATS=garbage is not valid (0, 1 or json:<path>); keeping (off)"));
	assert_null(np_opt.stats);
}

static void strings_are_copied(void **state)
{
	(void)state;
	/* Programs rewrite their environment (redis' setproctitle): the value must survive. */
	char var[] = "NUMAPAGE_STATS=json:/tmp/x.json";
	char *env[] = {var, NULL};
	np_options_load(env, false);
	memset(var, 'X', sizeof var - 1);
	assert_string_equal(np_opt.stats, "json:/tmp/x.json");
}

static void verbose_lists_every_option(void **state)
{
	(void)state;
	char *env[] = {"NUMAPAGE_VERBOSE=1", "NUMAPAGE_CONF=bind=strict", NULL};
	char err[4096];
	load_capturing(env, false, err, sizeof err);
	int n = 0;
	for (const char *p = err; (p = strstr(p, "numapage: option ")); p++)
		n++;
	int rows = 0;
	for (const struct np_option_doc *d = np_options_table(); d->name; d++)
		rows++;
	assert_int_equal(n, rows);
	assert_non_null(strstr(err, "numapage: option BIND = strict (NUMAPAGE_CONF)\n"));
	assert_non_null(strstr(err, "numapage: option VERBOSE = 1 (NUMAPAGE_VERBOSE)\n"));
	assert_non_null(strstr(err, "numapage: option PURGE_MB = 64 (default)\n"));
	np_opt.verbose = 0;
}

/* A thread's first allocation reads an option's source (the node policy asks whether BIND was
 * given) while numa_page_option_set may be writing it on another thread: the source was a plain
 * byte on both sides (a hostile review's ThreadSanitizer run, which this test repeats in CI's
 * TSan tier); any build checks that the reader only ever sees a source there is. */
enum { SOURCE_ROUNDS = 2000 };
static int source_seen_bad, source_reads, source_set_done; /* relaxed: no order between the two */

static void *read_sources(void *arg)
{
	int i = *(const int *)arg;
	while (!__atomic_load_n(&source_set_done, __ATOMIC_RELAXED)) {
		int s = np_options_source(i);
		if (s != NP_OPTION_DEFAULT && s != NP_OPTION_SET)
			__atomic_store_n(&source_seen_bad, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&source_reads, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void source_is_read_while_set(void **state)
{
	(void)state;
	np_options_init(); /* as the library's start-up does, before any thread of the program */
	int i = np_options_find("decay_ms");
	assert_true(i >= 0);
	assert_int_equal(np_options_source(i), NP_OPTION_DEFAULT);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, read_sources, &i), 0);
	while (!__atomic_load_n(&source_reads, __ATOMIC_RELAXED))
		sched_yield(); /* the reader is reading */
	for (int k = 0; k < SOURCE_ROUNDS; k++)
		assert_int_equal(numa_page_option_set("decay_ms", k & 1 ? "2000" : "3000"), 0);
	__atomic_store_n(&source_set_done, 1, __ATOMIC_RELAXED);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(source_seen_bad, 0);
	assert_int_equal(np_options_source(i), NP_OPTION_SET);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(defaults, reset),
		cmocka_unit_test_setup(parses_values, reset),
		cmocka_unit_test_setup(negative_values_parse, reset),
		cmocka_unit_test_setup(whitespace_around_numbers, reset),
		cmocka_unit_test_setup(rejects_bad_values_and_keeps_default, reset),
		cmocka_unit_test_setup(table_is_documented, reset),
		cmocka_unit_test_setup(conf_string_and_precedence, reset),
		cmocka_unit_test_setup(conf_string_empty_items_are_skipped, reset),
		cmocka_unit_test_setup(spaces_and_value_case_are_forgiven, reset),
		cmocka_unit_test_setup(unknown_names_warn_once_with_a_suggestion, reset),
		cmocka_unit_test_setup(unknown_conf_name_with_prefix_gets_a_suggestion, reset),
		cmocka_unit_test_setup(warnings_show_control_bytes_escaped, reset),
		cmocka_unit_test_setup(secure_execution_reads_nothing, reset),
		cmocka_unit_test_setup(stats_takes_only_its_forms, reset),
		cmocka_unit_test_setup(strings_are_copied, reset),
		cmocka_unit_test_setup(verbose_lists_every_option, reset),
		cmocka_unit_test_setup(source_is_read_while_set, reset),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
