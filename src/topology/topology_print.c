/*
 * topology_print.c — np_topo_print: the frozen table as `numapage topology` shows it, as text for
 * people or as JSON for scripts. Uses stdio, so it is only called by the tool or at a user's
 * request, never from inside the allocator's own paths. Reads the table only; no lock (the table
 * never changes after start-up). Nodes are shown by OS id, as numactl and the kernel number them.
 */
#include "json.h"
#include "topology/topology.h"

#include <string.h>

static const char *source_name(enum np_topo_source s)
{
	switch (s) {
	case NP_TOPO_SYSTEM:
		return "system";
	case NP_TOPO_XML:
		return "xml";
	case NP_TOPO_SYNTHETIC:
		return "synthetic";
	case NP_TOPO_FALLBACK:
		return "fallback";
	}
	return "unknown";
}

/* "0-3,8,10-11" */
/* Node i's CPUs as ranges: 0-3,8. */
static void print_cpu_ranges(FILE *out, const struct np_topo *t, int i)
{
	int n = t->node[i].ncpus;
	if (!n) {
		fputs("none", out);
		return;
	}
	for (int k = 0; k < n;) {
		int e = k;
		while (e + 1 < n && np_topo_node_cpu(t, i, e + 1) == np_topo_node_cpu(t, i, e) + 1)
			e++;
		fprintf(out, "%s%d", k ? "," : "", np_topo_node_cpu(t, i, k));
		if (e > k)
			fprintf(out, "-%d", np_topo_node_cpu(t, i, e));
		k = e + 1;
	}
}

static void print_size(FILE *out, uint64_t b)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	int u = 0;
	double v = (double)b;
	while (v >= 1024 && u + 1 < (int)NP_ARRAY_SIZE(unit)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		fprintf(out, "%llu B", (unsigned long long)b);
	else
		fprintf(out, "%.1f %s", v, unit[u]);
}

static void print_text(const struct np_topo *t, FILE *out)
{
	int memless = 0, cpuless = 0;
	for (int i = 0; i < t->nnodes; i++) {
		memless += !t->node[i].has_memory;
		cpuless += !t->node[i].has_cpus;
	}
	fprintf(out, "topology: %s (%s%s)\n", t->desc, source_name(t->source),
		t->is_system ? "" : ", not this machine: memory binding is skipped");
	fprintf(out, "nodes: %d, %d memoryless, %d CPU-less\n", t->nnodes, memless, cpuless);
	fprintf(out, "cpus: %d ids, %d allowed\n", t->ncpus, t->nallowed_cpus);
	fputs("memory: ", out);
	print_size(out, t->total_mem);
	fprintf(out, ", allowed on %d node%s\n", t->nmem_nodes, t->nmem_nodes == 1 ? "" : "s");

	for (int i = 0; i < t->nnodes; i++) {
		const struct np_topo_node *n = &t->node[i];
		fprintf(out, "node %d: memory ", n->os_id);
		print_size(out, n->mem_bytes);
		fputs(", cpus ", out);
		print_cpu_ranges(out, t, i);
		if (!n->has_memory)
			fputs(" [memoryless]", out);
		if (!n->has_cpus)
			fputs(" [CPU-less]", out);
		if (n->has_memory && !n->mem_allowed)
			fputs(" [memory not allowed]", out);
		if (n->has_cpus && !n->cpus_allowed)
			fputs(" [CPUs not allowed]", out);
		fputc('\n', out);
	}

	char pol[160];
	np_topo_policy_describe(t, &t->policy, pol, sizeof pol);
	fprintf(out, "memory policy: %s\n", pol);

	fputs("distances:\n      ", out);
	for (int j = 0; j < t->nnodes; j++)
		fprintf(out, " %4d", t->node[j].os_id);
	fputc('\n', out);
	for (int i = 0; i < t->nnodes; i++) {
		fprintf(out, "  %4d", t->node[i].os_id);
		for (int j = 0; j < t->nnodes; j++)
			fprintf(out, " %4d", t->node[i].distance[j]);
		fputc('\n', out);
	}

	fputs("fallback (nearest first, distance in brackets):\n", out);
	for (int i = 0; i < t->nnodes; i++) {
		const struct np_topo_node *n = &t->node[i];
		fprintf(out, "  node %d ->", n->os_id);
		for (int k = 0; k < n->nfallback; k++)
			fprintf(out, "%s %d (%d)", k ? "," : "", t->node[n->fallback[k]].os_id,
				n->fallback_dist[k]);
		fputc('\n', out);
	}
}

static void print_json(const struct np_topo *t, FILE *out)
{
	fputs("{\n  \"source\": ", out);
	np_json_string(out, source_name(t->source));
	fputs(",\n  \"desc\": ", out);
	np_json_string(out, t->desc);
	fprintf(out, ",\n  \"is_system\": %s,\n", t->is_system ? "true" : "false");
	fprintf(out, "  \"nnodes\": %d,\n  \"ncpus\": %d,\n  \"nallowed_cpus\": %d,\n", t->nnodes,
		t->ncpus, t->nallowed_cpus);
	char pol[160];
	np_topo_policy_describe(t, &t->policy, pol, sizeof pol);
	fputs("  \"memory_policy\": ", out);
	np_json_string(out, pol);
	fprintf(out, ",\n  \"memory_policy_nodes\": [");
	for (int i = 0, k = 0; i < t->nnodes; i++)
		if ((t->policy.nodes >> i) & 1)
			fprintf(out, "%s%d", k++ ? ", " : "", t->node[i].os_id);
	fputs("],\n", out);
	fprintf(out, "  \"nmem_nodes\": %d,\n  \"total_mem\": %llu,\n  \"nodes\": [", t->nmem_nodes,
		(unsigned long long)t->total_mem);
	for (int i = 0; i < t->nnodes; i++) {
		const struct np_topo_node *n = &t->node[i];
		fprintf(out, "%s\n    {\"os_id\": %d, \"index\": %d, \"mem_bytes\": %llu, ", i ? "," : "",
			n->os_id, i, (unsigned long long)n->mem_bytes);
		fprintf(out, "\"memoryless\": %s, \"cpuless\": %s, ", n->has_memory ? "false" : "true",
			n->has_cpus ? "false" : "true");
		fprintf(out, "\"mem_allowed\": %s, \"cpus_allowed\": %s,\n     \"cpus\": [",
			n->mem_allowed ? "true" : "false", n->cpus_allowed ? "true" : "false");
		for (int k = 0; k < n->ncpus; k++)
			fprintf(out, "%s%d", k ? ", " : "", np_topo_node_cpu(t, i, k));
		fputs("],\n     \"distances\": [", out);
		for (int j = 0; j < t->nnodes; j++)
			fprintf(out, "%s%d", j ? ", " : "", t->node[i].distance[j]);
		fputs("],\n     \"fallback\": [", out);
		for (int k = 0; k < n->nfallback; k++)
			fprintf(out, "%s%d", k ? ", " : "", t->node[n->fallback[k]].os_id);
		fputs("],\n     \"fallback_dist\": [", out);
		for (int k = 0; k < n->nfallback; k++)
			fprintf(out, "%s%d", k ? ", " : "", n->fallback_dist[k]);
		fputs("]}", out);
	}
	fputs("\n  ]\n}\n", out);
}

void np_topo_print(const struct np_topo *t, FILE *out, bool json)
{
	if (json)
		print_json(t, out);
	else
		print_text(t, out);
}
