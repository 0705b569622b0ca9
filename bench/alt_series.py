#!/usr/bin/env python3
"""alt_series.py - one npbench workload, several allocators or builds, alternating rounds.

    python3 bench/alt_series.py WORKLOAD THREADS SCALE ROUNDS LABEL=LIB[,VAR=VALUE...] ...
        [--npbench build/bench/npbench] [--pin]

Each round runs every variant once, the order rotated by one per round, so that drift on a
shared machine is spread over all of them. LIB is a shared object to preload, or "glibc" for
none; VAR=VALUE pairs go into that variant's environment (a prototype's switch, NUMAPAGE_*).
Prints, per variant, the median and minimum of the workload's own time (wall) and of the
process's CPU time (user + system, from wait4), each as a ratio to the first variant's median,
and every round's wall time. On a busy machine judge by CPU time: wall time then also counts
the time the process waited for a CPU. --pin passes npbench's --pin (worker i on the i-th CPU,
round robin), as bench/run.py does. Example, a prototype against the current build and
tcmalloc:

    python3 bench/alt_series.py larson 2 0.5 9 now=build/src/libnumapage.so \\
        proto=/tmp/proto.so,PROTO_SWITCH=1 tcmalloc=/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
"""
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    argv = sys.argv[1:]
    npbench = os.path.join(os.path.dirname(HERE), "build", "bench", "npbench")
    if "--npbench" in argv:
        i = argv.index("--npbench")
        npbench = argv[i + 1]
        del argv[i:i + 2]
    pin = ["--pin"] if "--pin" in argv else []
    if pin:
        argv.remove("--pin")
    if len(argv) < 5:
        sys.exit(__doc__)
    wl, threads, scale, rounds = argv[0], argv[1], argv[2], int(argv[3])
    variants = []
    for a in argv[4:]:
        label, _, rest = a.partition("=")
        parts = rest.split(",")
        env = dict(p.split("=", 1) for p in parts[1:])
        variants.append((label, parts[0], env))
    wall = {v[0]: [] for v in variants}
    cpu = {v[0]: [] for v in variants}
    for r in range(rounds):
        k = r % len(variants)
        for label, lib, env in variants[k:] + variants[:k]:
            e = dict(os.environ)
            e.pop("LD_PRELOAD", None)
            if lib != "glibc":
                e["LD_PRELOAD"] = lib
            e.update(env)
            p = subprocess.Popen([npbench, wl, "--threads", threads, "--scale", scale] + pin, env=e,
                                 stdout=subprocess.PIPE, text=True)
            out = p.stdout.read()
            _, status, ru = os.wait4(p.pid, 0)
            m = re.search(r"seconds=([0-9.]+)", out)
            if status != 0 or not m:
                sys.exit("alt_series: %s failed (status %d): %s" % (label, status, out[-300:]))
            wall[label].append(float(m.group(1)))
            cpu[label].append(ru.ru_utime + ru.ru_stime)
    med = statistics.median
    bw, bc = med(wall[variants[0][0]]), med(cpu[variants[0][0]])
    for label, _, _ in variants:
        w, c = wall[label], cpu[label]
        print("%-12s %s/%s wall median %.3f min %.3f (x%.2f)  cpu median %.3f min %.3f (x%.2f)  [%s]" % (
            label, wl, threads, med(w), min(w), med(w) / bw, med(c), min(c), med(c) / bc,
            " ".join("%.3f" % x for x in w)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
