#!/bin/sh
# rehearse.sh [TOPOLOGY] — how would ./rehearse be placed on another machine?
#
# TOPOLOGY is an hwloc XML file (default: the source tree's tests/topologies/r7425.xml, a
# 2-socket AMD EPYC 7425 with 8 nodes, 6 of them without memory). Make one of any machine you
# have access to with `lstopo --of xml > machine.xml` (hwloc), or write
# synthetic:<hwloc synthetic string> for a made-up one.
#
#   1. `numapage topology --topology TOPOLOGY`: the nodes, their memory and CPUs, the distance
#      table, and each node's fallback order (where a thread of that node gets memory).
#   2. `numapage run --topology TOPOLOGY --place spread -- ./rehearse`: the library places
#      each new thread on the node with fewest threads; the program says where each thread and
#      its memory ended up, then prints the per-node table.
#   3. `NUMAPAGE_TOPOLOGY=TOPOLOGY ./rehearse --set-home`: the threads choose their home nodes
#      themselves (numa_page_set_home_node); the program prints the table itself.
#
# Environment: NUMAPAGE (the numapage command, default numapage from PATH) and REHEARSE (the
# program, default ./rehearse next to this script).
set -eu
here=$(dirname "$0")
topo=${1:-$here/../../tests/topologies/r7425.xml}
numapage=${NUMAPAGE:-numapage}
prog=${REHEARSE:-$here/rehearse}

echo "== 1. numapage topology --topology $topo"
"$numapage" topology --topology "$topo"

echo
echo "== 2. numapage run --topology $topo --place spread -- rehearse"
"$numapage" run --topology "$topo" --place spread -- "$prog"

echo
echo "== 3. NUMAPAGE_TOPOLOGY=$topo rehearse --set-home"
NUMAPAGE_TOPOLOGY=$topo "$prog" --set-home
