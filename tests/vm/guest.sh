#!/bin/sh
# tests/vm/guest.sh — the vm tier inside the guest (busybox sh), run by /init with stdout on
# ttyS1 and stderr on ttyS2. Prints the facts the host checks ("@@begin NAME" ... "@@end"
# sections: sysfs, lstopo-xml, numapage-json) and runs the vm_* placement programs and, in the
# 2990wx and r7425 guests, the api and stress tiers under LD_PRELOAD. Every check prints one
# "ok - " or "not ok - " line; serial output is slow (~150 KB/s), so summaries only.
# Exit status: 0 when nothing failed.

topo=$(sed -n 's/.*np\.topo=\([^ ]*\).*/\1/p' /proc/cmdline)
lib=/usr/lib/x86_64-linux-gnu/libnumapage.so.0
failed=0

# np.probe=1: the host only wants to know that this kernel boots with this accelerator.
grep -q 'np\.probe=1' /proc/cmdline && exit 0

echo "# guest: Linux $(uname -r), topology $topo, $(nproc) CPUs, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB"

echo "@@begin sysfs"
for d in /sys/devices/system/node/node*; do
	n=${d##*/node}
	echo "node $n cpus=$(cat $d/cpulist) memkb=$(awk '/MemTotal/ {print $4}' $d/meminfo)" \
		"dist=$(tr ' ' ',' <$d/distance)"
done
echo "numa_balancing $(cat /proc/sys/kernel/numa_balancing)"
echo "@@end"

echo "@@begin lstopo-xml"
lstopo-no-graphics --of xml -
echo "@@rc $?"
echo "@@end"

echo "@@begin numapage-json"
numapage topology --json 2>/tmp/numapage.err
rc=$?
echo
echo "@@rc $rc"
echo "@@end"
echo "@@begin numapage-stderr"
cat /tmp/numapage.err
echo "@@end"

# run NAME TIMEOUT CMD...: a program that prints its own ok/not ok lines; a crash, a hang or a
# non-zero exit without a "not ok" line is reported here.
run() {
	name=$1 secs=$2
	shift 2
	start=$(date +%s)
	timeout "$secs" "$@" </dev/null >/tmp/out 2>/tmp/err
	rc=$?
	cat /tmp/out
	if [ -s /tmp/err ]; then
		echo "--- stderr of $name" >&2
		tail -n 20 /tmp/err >&2
	fi
	if [ $rc -ne 0 ]; then
		failed=1
		grep -q '^not ok' /tmp/out ||
			echo "not ok - $name: exit status $rc$( [ $rc -ge 124 ] && echo ' (timeout or signal)')"
	fi
	echo "# $name: $(( $(date +%s) - start )) s"
}

while read -r p; do
	[ -x "$p" ] || continue
	case $p in
	*_preload) run "${p##*/} (LD_PRELOAD)" 120 env LD_PRELOAD=$lib "$p" ;;
	*) run "${p##*/}" 120 "$p" ;;
	esac
done </vm/bin.list

# bench/stream under numapage run --place none|spread (issue 8): where its threads ran, never
# how fast (the GB/s lines are notes; TCG bandwidth means little).
case $topo in
4node | 2990wx) [ -x /vm/bin/vm_threads ] && run "vm_threads stream" 120 /vm/bin/vm_threads stream ;;
esac

# The malloc tiers under LD_PRELOAD (tests as meson registered them, listed in /vm/tiers.sh as
# "tier TIER NAME [VAR=VALUE...] PROGRAM [ARGS...]"): one line per test, its output only when
# it fails.
# Tests with deadlines scale them by this (1 under KVM, more under TCG; set by vmrun.py).
NP_TEST_TIME_SCALE=$(sed -n 's/.*np\.timescale=\([0-9]*\).*/\1/p' /proc/cmdline)
export NP_TEST_TIME_SCALE=${NP_TEST_TIME_SCALE:-1}
tier() {
	t=$1 name=$2
	shift 2
	start=$(date +%s)
	(cd /tmp && timeout 120 env LD_PRELOAD=$lib "$@") </dev/null >/tmp/out 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok - $t/$name under LD_PRELOAD in the $topo guest ($(( $(date +%s) - start )) s)"
	elif [ $rc -eq 77 ]; then
		echo "# $t/$name: skipped (77)"
	else
		failed=1
		echo "not ok - $t/$name under LD_PRELOAD in the $topo guest: exit status $rc" \
			"after $(( $(date +%s) - start )) s"
		tail -n 15 /tmp/out | sed 's/^/#   /'
	fi
}
. /vm/tiers.sh
exit $failed
