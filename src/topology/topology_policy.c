/*
 * topology_policy.c — the calling thread's memory policy in the table's terms (see
 * np_topo_read_policy in topology.h): which MPOL_* modes the library follows, and over which of
 * the table's nodes.
 */
#include "topology/topology.h"

#include <string.h>

#include "log.h"
#include "os.h"

/* <linux/mempolicy.h> */
enum {
	MODE_DEFAULT = 0,
	MODE_PREFERRED = 1,
	MODE_BIND = 2,
	MODE_INTERLEAVE = 3,
	MODE_LOCAL = 4,
	MODE_PREFERRED_MANY = 5,
	MODE_WEIGHTED_INTERLEAVE = 6,
	MODE_MASK = 0xff, /* get_mempolicy ORs MPOL_F_* flags into the mode */
};
#define POLICY_BITS NP_OS_NODE_IDS
#define BITS_PER_LONG (8 * sizeof(unsigned long))

void np_topo_read_policy(const struct np_topo *t, struct np_topo_policy *out)
{
	*out = (struct np_topo_policy){.mode = NP_POLICY_DEFAULT, .kernel_mode = -1};
	if (!t->is_system)
		return;
	unsigned long mask[POLICY_BITS / BITS_PER_LONG + 1] = {0};
	int mode = 0;
	if (np_os_mempolicy(&mode, mask, POLICY_BITS) < 0)
		return;
	mode &= MODE_MASK;
	out->kernel_mode = mode;
	uint8_t want;
	switch (mode) {
	case MODE_PREFERRED:
	case MODE_PREFERRED_MANY: want = NP_POLICY_PREFERRED; break;
	case MODE_INTERLEAVE:
	case MODE_WEIGHTED_INTERLEAVE: want = NP_POLICY_INTERLEAVE; break;
	case MODE_BIND: want = NP_POLICY_PREFERRED; break;
	default: return; /* DEFAULT, LOCAL */
	}
	uint64_t nodes = 0, allowed = 0;
	for (int i = 0; i < t->nnodes; i++) {
		int id = t->node[i].os_id;
		if (!t->node[i].mem_allowed)
			continue;
		allowed |= 1ULL << i;
		if (id < POLICY_BITS && (mask[id / BITS_PER_LONG] >> (id % BITS_PER_LONG) & 1))
			nodes |= 1ULL << i;
	}
	/* MPOL_PREFERRED with an empty mask is the old spelling of MPOL_LOCAL. MPOL_BIND over
	 * every node the process may use is what the allowed nodes say already (a bind at
	 * start-up is read as them); over fewer, set by a thread since, its nodes come first. */
	if (!nodes || (mode == MODE_BIND && nodes == allowed))
		return;
	out->mode = want;
	out->nodes = nodes;
}

static const char *kernel_name(int mode)
{
	switch (mode) {
	case MODE_DEFAULT: return "MPOL_DEFAULT";
	case MODE_PREFERRED: return "MPOL_PREFERRED";
	case MODE_BIND: return "MPOL_BIND";
	case MODE_INTERLEAVE: return "MPOL_INTERLEAVE";
	case MODE_LOCAL: return "MPOL_LOCAL";
	case MODE_PREFERRED_MANY: return "MPOL_PREFERRED_MANY";
	case MODE_WEIGHTED_INTERLEAVE: return "MPOL_WEIGHTED_INTERLEAVE";
	default: return "an unknown mode";
	}
}

void np_topo_policy_describe(const struct np_topo *t, const struct np_topo_policy *pol, char *buf, size_t size)
{
	if (pol->mode == NP_POLICY_DEFAULT) {
		if (pol->kernel_mode == MODE_BIND)
			np_format(buf, size, "default (MPOL_BIND: memory only from its nodes)");
		else if (pol->kernel_mode < 0)
			np_format(buf, size, "default");
		else
			np_format(buf, size, "default (%s)", kernel_name(pol->kernel_mode));
		return;
	}
	bool many = __builtin_popcountll(pol->nodes) > 1;
	const char *how = pol->mode == NP_POLICY_INTERLEAVE ? "interleave over"
			  : pol->kernel_mode == MODE_BIND ? "bound to"
							  : "preferred";
	size_t len = np_format(buf, size, "%s node%s", how, many ? "s" : "");
	bool first = true;
	for (int i = 0; i < t->nnodes && len < size; i++)
		if ((pol->nodes >> i) & 1) {
			len += np_format(buf + len, size - len, "%s%d", first ? " " : ",", t->node[i].os_id);
			first = false;
		}
	if (len < size)
		np_format(buf + len, size - len, " (%s)", kernel_name(pol->kernel_mode));
}
