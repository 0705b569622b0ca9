/*
 * numapage options [--json] [PID] — every NUMAPAGE_* option with the value in force and where
 * it came from (the default, NUMAPAGE_CONF, or its own variable), its default and meaning.
 * Without PID, for a program started from here (this environment, through the library's own
 * table and parser); with PID, for that running process, from its environment as it was
 * started (/proc/PID/environ): values it changed later with numa_page_option_set are not seen.
 * A process in secure-execution mode (set-user-ID: /proc/PID/auxv's AT_SECURE) reads no
 * NUMAPAGE_* variable: its options are the defaults, and a note says why.
 * Warnings about bad values and unknown NUMAPAGE_* names are the library's own.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "../cmds.h"
#include "../lib/procs.h"
#include "json.h"
#include "options.h"

void np_usage_options(FILE *out)
{
	fputs("usage: numapage options [--json] [PID]\n"
	      "  every NUMAPAGE_* option: the value a program started here gets (or process PID got)\n"
	      "  and where it comes from, its default and meaning\n"
	      "      --json   one JSON object\n"
	      "  -h, --help   this text\n",
	      out);
}

static int usage_error(const char *fmt, const char *arg)
{
	return np_usage_error("options", np_usage_options, fmt, arg);
}

/* /proc/PID/environ as a NULL-terminated array of strings inside one buffer, all of it (an
 * environment may be megabytes: one cut short would show a wrong value), or NULL (errno set).
 * The command exits soon after: nothing is freed. */
static char **environ_of(long pid)
{
	char path[96];
	np_proc_path((int)pid, "environ", path, sizeof path); /* its main thread may have ended */
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	for (;;) {
		if (!buf) {
			close(fd);
			errno = ENOMEM;
			return NULL;
		}
		if (n + 1 == cap) {
			char *grown = cap < ((size_t)1 << 30) ? realloc(buf, cap * 2) : NULL;
			if (!grown)
				free(buf);
			buf = grown;
			cap *= 2;
			continue;
		}
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int saved = errno;
			free(buf);
			close(fd);
			errno = saved;
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	size_t count = 0;
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		count += buf[i] != '\0';
	char **vars = malloc((count + 1) * sizeof *vars);
	if (!vars) {
		free(buf);
		errno = ENOMEM;
		return NULL;
	}
	size_t k = 0;
	for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
		if (buf[i])
			vars[k++] = buf + i;
	vars[k] = NULL;
	return vars;
}

/* Whether process pid runs in secure-execution mode (set-user-ID, set-group-ID or file
 * capabilities: AT_SECURE in /proc/PID/auxv), where the library reads no NUMAPAGE_* variable:
 * 1 or 0, -1 when its auxv cannot be read (errno set). */
static int secure_of(long pid)
{
	char path[96];
	np_proc_path((int)pid, "auxv", path, sizeof path); /* its main thread may have ended */
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	unsigned long kv[2];
	int secure = -1;
	while (fread(kv, sizeof kv, 1, f) == 1 && kv[0] != AT_NULL)
		if (kv[0] == AT_SECURE)
			secure = kv[1] != 0;
	fclose(f);
	if (secure < 0)
		errno = ENOENT;
	return secure;
}

static void source_text(int i, const char *name, char *buf, size_t size)
{
	int src = np_options_source(i);
	if (src == NP_OPTION_ENV)
		snprintf(buf, size, "set by NUMAPAGE_%s; ", name);
	else if (src == NP_OPTION_CONF)
		snprintf(buf, size, "set by NUMAPAGE_CONF; ");
	else
		buf[0] = '\0';
}

int np_cmd_options(int argc, char **argv)
{
	enum { OPT_JSON = 1000 };
	static const struct option opts[] = {
		{"json", no_argument, NULL, OPT_JSON}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
	};
	bool json = false;
	int c;
	optind = 0; /* 0: glibc starts a fresh scan (the dispatcher scanned with "+" before) */
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_JSON: json = true; break;
		case 'h': np_usage_options(stdout); return 0;
		default: {
			char why[128];
			return usage_error("%s", np_bad_option(why, sizeof why, argv, opts));
		}
		}
	}
	if (argc - optind > 1)
		return usage_error("one process id at most, not '%s' too", argv[optind + 1]);
	extern char **environ;
	char **env = environ;
	int secure = 0;
	if (optind < argc) {
		char *end;
		long pid = strtol(argv[optind], &end, 10);
		if (end == argv[optind] || *end || pid <= 0 || pid > 0x7fffffff)
			return usage_error("'%s' is not a process id", argv[optind]);
		env = environ_of(pid);
		if (!env && errno == ESRCH && (kill((pid_t)pid, 0) == 0 || errno == EPERM)) {
			/* It exists: a kernel thread, or a zombie (no memory left to read). */
			fprintf(stderr, "numapage options: process %ld has no environment to read (a kernel thread, or "
				"a process that has exited)\n", pid);
			return 1;
		}
		if (!env) {
			fprintf(stderr, "numapage options: cannot read the environment of process %ld: %s\n", pid,
				strerror(errno));
			return 1;
		}
		/* A set-user-ID program reads none of it: what it runs with are the defaults. */
		secure = secure_of(pid);
		if (secure > 0)
			fprintf(stderr, "numapage options: process %ld runs in secure-execution mode (set-user-ID, "
				"set-group-ID or capabilities): it ignores every NUMAPAGE_* variable, so every "
				"option has its default\n", pid);
		else if (secure < 0)
			fprintf(stderr, "numapage options: cannot tell whether process %ld runs in "
				"secure-execution mode (%s): the values below are those of its environment, "
				"which it ignores if it does\n", pid, strerror(errno));
	}
	/* The library's own loader and table: what is printed is what the library would do. */
	np_options_load(env, secure > 0);
	const struct np_option_doc *t = np_options_table();
	if (json)
		printf("{\"secure\":%s,\"options\":[", secure < 0 ? "null" : secure ? "true" : "false");
	for (int i = 0; t[i].name; i++) {
		char value[4096], src[64];
		np_options_value(i, value, sizeof value);
		if (json) {
			printf("%s{\"name\":\"NUMAPAGE_%s\",\"value\":", i ? "," : "", t[i].name);
			np_json_string(stdout, value);
			printf(",\"source\":\"%s\",\"default\":",
			       np_options_source(i) == NP_OPTION_ENV ? "environment"
								   : np_options_source_name(np_options_source(i)));
			np_json_string(stdout, t[i].deflt);
			printf(",\"runtime\":%s,\"doc\":", t[i].runtime ? "true" : "false");
			np_json_string(stdout, t[i].doc);
			putchar('}');
			continue;
		}
		source_text(i, t[i].name, src, sizeof src);
		printf("NUMAPAGE_%s=%s  (%sdefault %s%s)\n    %s\n", t[i].name, value, src, t[i].deflt,
		       t[i].runtime ? "; numa_page_option_set can change it" : "", t[i].doc);
	}
	if (json)
		puts("]}");
	return 0; /* a failed write: main's check of stdout */
}
