/*
 * numapage run — runs a program with libnumapage preloaded and the given options set.
 *
 *   numapage run [--stats] [--json FILE] [--topology FILE|synthetic:STR] [--place POLICY]
 *                [--verbose] [--lib PATH] -- COMMAND [ARGS...]
 *
 * With --stats every process of the job (the command and whatever it executes) writes its
 * per-node statistics as JSON into a private temporary directory when it exits; when the
 * command has finished, the sums over all processes are printed as a numastat-like table on
 * stderr (and written as JSON to FILE with --json). The exit status is the command's.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../cmds.h"
#include "numapage.h"

#define MAX_NODES 1024

struct totals {
	int nnodes;
	int node[MAX_NODES];
	unsigned long long v[MAX_NODES][NUMA_PAGE_STAT_NITEMS];
	int nprocs;
};

static void usage(FILE *out)
{
	fprintf(out, "usage: numapage run [--stats] [--json FILE] [--topology FILE|synthetic:STR]\n"
		     "                    [--place none|spread|fill] [--verbose] [--lib PATH] -- COMMAND [ARGS...]\n");
}

static int file_exists(const char *p)
{
	return access(p, R_OK) == 0;
}

/* The library to preload: --lib, $NUMAPAGE_LIB, the build tree's when this tool runs from it,
 * else the installed one. */
static const char *find_lib(const char *given)
{
	static char path[PATH_MAX + 64];
	if (given)
		return given;
	const char *env = getenv("NUMAPAGE_LIB");
	if (env && *env)
		return env;
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* build tree: <build>/tools/numapage -> <build>/src/libnumapage.so */
			snprintf(path, sizeof path, "%s/../src/libnumapage.so", exe);
			if (strcmp(exe, NP_BUILD_TOOLDIR) == 0 && file_exists(path))
				return path;
		}
	}
	snprintf(path, sizeof path, "%s/libnumapage.so.0", NP_LIBDIR);
	if (file_exists(path))
		return path;
	return "libnumapage.so.0"; /* let the dynamic loader search */
}

static int node_slot(struct totals *t, int node)
{
	for (int i = 0; i < t->nnodes; i++)
		if (t->node[i] == node)
			return i;
	if (t->nnodes == MAX_NODES)
		return -1;
	/* keep the columns sorted by node id */
	int i = t->nnodes++;
	while (i > 0 && t->node[i - 1] > node) {
		t->node[i] = t->node[i - 1];
		memcpy(t->v[i], t->v[i - 1], sizeof t->v[i]);
		i--;
	}
	t->node[i] = node;
	memset(t->v[i], 0, sizeof t->v[i]);
	return i;
}

static int item_index(const char *name, size_t len)
{
	for (int i = 0; i < NUMA_PAGE_STAT_NITEMS; i++) {
		const char *n = numa_page_stat_name(i);
		if (n && strlen(n) == len && strncmp(n, name, len) == 0)
			return i;
	}
	return -1;
}

/* Adds one process's JSON report ({"nodes":[{"node":N,"item":V,...},...]}) into t. The format
 * is the library's own: flat objects of integer members inside the "nodes" array. */
static int add_report(struct totals *t, const char *text)
{
	const char *p = strstr(text, "\"nodes\"");
	if (!p)
		return -1;
	while ((p = strchr(p, '{')) != NULL) {
		const char *end = strchr(p, '}');
		if (!end)
			return -1;
		long long vals[NUMA_PAGE_STAT_NITEMS];
		int have[NUMA_PAGE_STAT_NITEMS] = {0};
		int node = -1;
		for (const char *k = p; k < end && (k = strchr(k, '"')) != NULL && k < end;) {
			const char *kend = strchr(k + 1, '"');
			if (!kend || kend > end)
				return -1;
			const char *colon = strchr(kend, ':');
			if (!colon || colon > end)
				return -1;
			char *num_end;
			long long v = strtoll(colon + 1, &num_end, 10);
			if (num_end == colon + 1) { /* not a number: skip the member */
				k = kend + 1;
				const char *q = strchr(kend + 1, '"');
				if (q && q < end)
					k = strchr(q + 1, '"') ? strchr(q + 1, '"') + 1 : end;
				continue;
			}
			size_t len = (size_t)(kend - k - 1);
			if (len == 4 && strncmp(k + 1, "node", 4) == 0) {
				node = (int)v;
			} else {
				int i = item_index(k + 1, len);
				if (i >= 0) {
					vals[i] = v;
					have[i] = 1;
				}
			}
			k = num_end;
		}
		if (node >= 0) {
			int s = node_slot(t, node);
			if (s < 0)
				return -1;
			for (int i = 0; i < NUMA_PAGE_STAT_NITEMS; i++)
				if (have[i])
					t->v[s][i] += (unsigned long long)vals[i];
		}
		p = end + 1;
	}
	return 0;
}

static void collect(struct totals *t, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "r");
		if (f) {
			static char buf[1 << 20];
			size_t n = fread(buf, 1, sizeof buf - 1, f);
			buf[n] = '\0';
			fclose(f);
			if (add_report(t, buf) == 0)
				t->nprocs++;
		}
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

static void print_table(const struct totals *t, FILE *out)
{
	fprintf(out, "numapage: per-node statistics of the job, %d process(es) (pages; malloc_* in bytes)\n",
		t->nprocs);
	fprintf(out, "%-20s", "");
	for (int i = 0; i < t->nnodes; i++) {
		char h[32];
		snprintf(h, sizeof h, "node%d", t->node[i]);
		fprintf(out, " %15s", h);
	}
	fprintf(out, " %15s\n", "Total");
	for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++) {
		unsigned long long sum = 0;
		fprintf(out, "%-20s", numa_page_stat_name(k));
		for (int i = 0; i < t->nnodes; i++) {
			fprintf(out, " %15llu", t->v[i][k]);
			sum += t->v[i][k];
		}
		fprintf(out, " %15llu\n", sum);
	}
}

static int write_json(const struct totals *t, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	fprintf(f, "{\"processes\":%d,\"nodes\":[", t->nprocs);
	for (int i = 0; i < t->nnodes; i++) {
		fprintf(f, "%s{\"node\":%d", i ? "," : "", t->node[i]);
		for (int k = 0; k < NUMA_PAGE_STAT_NITEMS; k++)
			fprintf(f, ",\"%s\":%llu", numa_page_stat_name(k), t->v[i][k]);
		fprintf(f, "}");
	}
	fprintf(f, "]}\n");
	return fclose(f);
}

int np_cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{"stats", no_argument, NULL, 's'},   {"json", required_argument, NULL, 'j'},
		{"topology", required_argument, NULL, 't'}, {"place", required_argument, NULL, 'p'},
		{"verbose", no_argument, NULL, 'v'}, {"lib", required_argument, NULL, 'l'},
		{"help", no_argument, NULL, 'h'},    {NULL, 0, NULL, 0},
	};
	int stats = 0, c;
	const char *json = NULL, *lib = NULL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+sj:t:p:vl:h", opts, NULL)) != -1) {
		switch (c) {
		case 's': stats = 1; break;
		case 'j': json = optarg; stats = 1; break;
		case 't': setenv("NUMAPAGE_TOPOLOGY", optarg, 1); break;
		case 'p':
			if (strcmp(optarg, "none") && strcmp(optarg, "spread") && strcmp(optarg, "fill")) {
				fprintf(stderr, "numapage run: --place takes none, spread or fill, not '%s'\n", optarg);
				return 2;
			}
			setenv("NUMAPAGE_PLACE", optarg, 1);
			break;
		case 'v': setenv("NUMAPAGE_VERBOSE", "1", 1); break;
		case 'l': lib = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "numapage run: no command given\n");
		usage(stderr);
		return 2;
	}
	const char *so = find_lib(lib);
	const char *old = getenv("LD_PRELOAD");
	char *preload = malloc(strlen(so) + (old ? strlen(old) : 0) + 2);
	if (!preload)
		return 1;
	sprintf(preload, "%s%s%s", so, old && *old ? ":" : "", old ? old : "");
	setenv("LD_PRELOAD", preload, 1);
	free(preload);

	char dir[] = "/tmp/numapage-run.XXXXXX";
	if (stats) {
		if (!mkdtemp(dir)) {
			perror("numapage run: mkdtemp");
			return 1;
		}
		char spec[sizeof dir + 16];
		snprintf(spec, sizeof spec, "json:%s/%%p.json", dir);
		setenv("NUMAPAGE_STATS", spec, 1);
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("numapage run: fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "numapage run: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	/* The job gets the terminal's signals; we only wait for it. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			perror("numapage run: waitpid");
			return 1;
		}
	if (stats) {
		static struct totals t;
		collect(&t, dir);
		if (t.nprocs == 0)
			fprintf(stderr, "numapage run: no process reported statistics (is %s loadable?)\n", so);
		else
			print_table(&t, stderr);
		if (json && write_json(&t, json) != 0)
			fprintf(stderr, "numapage run: cannot write %s\n", json);
	}
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}
