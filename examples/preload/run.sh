#!/bin/sh
# run.sh [PROGRAM [ARGS...]] — runs an unmodified program under libnumapage, twice:
#
#   1. with the numapage command: `numapage run --stats --raw -- PROGRAM`. It preloads the library
#      into PROGRAM and everything PROGRAM starts, and prints the job's per-node table on stderr
#      when it is over (the sums over all of the job's processes).
#   2. with the dynamic loader alone: `LD_PRELOAD=libnumapage.so.0 NUMAPAGE_STATS=1 PROGRAM`.
#      Each process prints its own table on stderr when it exits.
#
# PROGRAM defaults to ./churn next to this script. Environment:
#   NUMAPAGE      the numapage command (default: numapage, from PATH)
#   NUMAPAGE_LIB  the library to preload (default: libnumapage.so.0 in pkg-config's libdir,
#                 else left to the loader's search path); numapage run honours it too
set -eu
here=$(dirname "$0")
numapage=${NUMAPAGE:-numapage}
if [ $# -eq 0 ]; then
	set -- "$here/churn"
fi
lib=${NUMAPAGE_LIB:-}
if [ -z "$lib" ]; then
	libdir=$(pkg-config --variable=libdir numapage 2>/dev/null || true)
	lib=${libdir:+$libdir/}libnumapage.so.0
fi

echo "== 1. numapage run --stats --raw -- $*"
"$numapage" run --stats --raw -- "$@"

echo
echo "== 2. LD_PRELOAD=$lib NUMAPAGE_STATS=1 $*"
LD_PRELOAD=$lib NUMAPAGE_STATS=1 "$@"
