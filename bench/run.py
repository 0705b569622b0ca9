#!/usr/bin/env python3
"""run.py - the benchmark suite of libnumapage, side by side with glibc, jemalloc, tcmalloc and
mimalloc (Debian's packages), every allocator brought in through LD_PRELOAD.

    python3 bench/run.py [--lib build/src/libnumapage.so] [--quick] [--scale X]
                         [--threads 1,2,4,N] [--rounds 3] [--only a,b] [--write-results]

For each round, for each benchmark, every allocator runs once, in an order that rotates from
round to round (A B C D E, B C D E A, ...). Before its numbers count, every run proves that the
preload took effect: npbench names the shared object that defines its malloc, and the real
programs are run with a probe library that does the same in every process they start. A run
whose owner of malloc is not the allocator under test is a failure, as is a crash, a timeout or
a workload's own check. Timing is reported, never asserted.

Results go to bench/out/<date-time>/ (runs.csv, runs.json, summary.md, time.png, rss.png);
--write-results also writes bench/RESULTS.md and its charts under bench/results/.
The exit status is 1 when any run failed, else 0.
"""
import argparse
import csv
import datetime
import json
import math
import os
import platform
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

C_WORKLOADS = ["larson", "xmalloc", "cache-scratch", "cache-thrash", "alloc-test", "mstress",
               "realloc-grow", "large-blocks", "churn", "large-calloc", "rptest", "fork", "exec"]
REAL_WORKLOADS = ["python", "gcc", "sqlite", "redis"]
ALL_WORKLOADS = C_WORKLOADS + REAL_WORKLOADS + ["page-api"]

# Debian's allocators: (name, soname looked up with ldconfig). glibc has no library to preload.
DEBIAN_ALLOCATORS = [("glibc", None), ("jemalloc", "libjemalloc.so.2"),
                     ("tcmalloc", "libtcmalloc_minimal.so.4"), ("mimalloc", "libmimalloc.so.2")]
BASELINE = "libnumapage"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---- machine and libraries --------------------------------------------------------------------

def ldconfig_paths():
    """soname -> path for this machine's architecture, from the dynamic linker's cache."""
    paths = {}
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout
    except OSError:
        try:
            out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True,
                                 check=False).stdout
        except OSError:
            out = ""
    want = "x86-64" if platform.machine() == "x86_64" else None
    for line in out.splitlines():
        line = line.strip()
        if "=>" not in line:
            continue
        left, path = line.rsplit("=>", 1)
        soname = left.split()[0]
        if want and want not in left and "64" in platform.machine():
            continue
        paths.setdefault(soname, path.strip())
    return paths


def realpath(p):
    return os.path.realpath(p) if p else p


class Allocator:
    def __init__(self, name, path, expect=None, note=""):
        self.name = name
        self.path = path          # what goes into LD_PRELOAD, None for glibc
        self.expect = realpath(expect or path)  # the file that must define malloc
        self.note = note
        self.usable = True

    def preload(self, extra=()):
        libs = ([self.path] if self.path else []) + list(extra)
        return " ".join(libs)


def machine_info():
    info = {"hostname": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count()}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        for line in out.splitlines():
            k, _, v = line.partition(":")
            v = v.strip()
            if k == "Model name":
                info["model"] = v
            elif k == "NUMA node(s)":
                info["numa_nodes"] = v
            elif k == "Socket(s)":
                info["sockets"] = v
            elif k == "Thread(s) per core":
                info["threads_per_core"] = v
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        info["memory_gib"] = round(kb / 1048576, 1)
    except (OSError, ValueError, IndexError):
        pass
    return info


HOST_KEYS = ("fault_4k_us", "fault_2m_us", "huge_4k_mib", "huge_mib", "chase_4k_ns", "chase_2m_ns", "mib")


def host_costs(exe):
    """What this machine charges for a first write and a TLB-missing load (bench/host_costs.c),
    as a dict of its HOST_KEYS' values; the reason as {"error": ...} when it could not be
    measured or its output lacks a figure."""
    try:
        r = subprocess.run([exe], capture_output=True, text=True, check=False, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"error": str(e)}
    if r.returncode != 0:
        return {"error": (r.stderr.strip() or "exit %d" % r.returncode)[-200:]}
    try:
        h = {k: float(v) for k, v in (kv.split("=", 1) for kv in r.stdout.split())}
    except ValueError:
        return {"error": "unreadable output: %r" % r.stdout[:200]}
    missing = [k for k in HOST_KEYS if k not in h or not math.isfinite(h[k])]
    if missing:
        return {"error": "no %s in its output %r" % (", ".join(missing), r.stdout[:200])}
    return h


def host_line(h):
    """RESULTS.md's header line for host_costs' figures (a run's meta may predate any of them)."""
    if not h:
        return "- memory costs: not measured (a run before bench/host_costs existed)"
    if "error" in h or any(k not in h for k in HOST_KEYS if k != "huge_4k_mib"):
        return "- memory costs: bench/host_costs failed: %s" % h.get("error", "figures missing")
    if h["huge_mib"] <= 0:
        huge = "no huge page granted: both figures are of 4 KiB pages"
    else:
        huge = "%d of %d MiB backed by huge pages" % (h["huge_mib"], h["mib"])
    if h.get("huge_4k_mib", 0) != 0:  # absent from the first version's output
        huge += "; the 4 KiB mapping had %d MiB of huge pages too" % h["huge_4k_mib"]
    return ("- memory costs (`bench/host_costs`, medians of 3): first write of a 4 KiB page %.2f us, "
            "%.2f us per 4 KiB with 2 MiB pages (%s); a dependent load to a line of a random page "
            "of %d MiB (mostly the TLB miss) %.1f ns with 4 KiB pages, %.1f ns with 2 MiB pages" % (
                h["fault_4k_us"], h["fault_2m_us"], huge, h["mib"], h["chase_4k_ns"], h["chase_2m_ns"]))


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def git_commit():
    try:
        rev = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=False).stdout.strip()
        return rev + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def package_versions():
    pkgs = ["libc6", "libjemalloc2", "libtcmalloc-minimal4", "libmimalloc2.0", "python3.11", "gcc",
            "sqlite3", "redis-server", "libnuma1"]
    out = {}
    for p in pkgs:
        try:
            r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", p], capture_output=True,
                               text=True, check=False)
            if r.returncode == 0 and r.stdout:
                out[p] = r.stdout
        except OSError:
            break
    return out


# ---- running one process ----------------------------------------------------------------------

class Proc:
    """A finished child: status, wall time, peak RSS of it and its waited-for descendants."""

    def __init__(self, rc, wall, maxrss_kb, out, err, timed_out, cpu=None):
        self.rc, self.wall, self.maxrss_kb = rc, wall, maxrss_kb
        self.out, self.err, self.timed_out = out, err, timed_out
        self.cpu = cpu  # user + system seconds of the command and its waited-for children

    def why(self):
        if self.timed_out:
            return "timeout"
        if self.rc < 0:
            return "killed by signal %d (%s)" % (-self.rc, signal.Signals(-self.rc).name)
        return "exit status %d" % self.rc


SPAWN = None  # path of npbench_spawn, set by Suite


def parse_spawn(path):
    try:
        with open(path) as f:
            return kv(f.read())
    except OSError:
        return {}


def run_proc(cmd, env, timeout, stdin_path=None):
    """Runs cmd under npbench_spawn (its peak RSS is then its own, see spawn.c)."""
    fd, resfile = tempfile.mkstemp(prefix="npbench-spawn-")
    os.close(fd)
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        fi = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        p = subprocess.Popen([SPAWN, resfile, str(int(math.ceil(timeout)))] + list(cmd), env=env,
                             stdout=fo, stderr=fe, stdin=fi, start_new_session=True)
        try:
            p.wait(timeout + 30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        if stdin_path:
            fi.close()
        fo.seek(0)
        fe.seek(0)
        out = fo.read().decode(errors="replace")
        err = fe.read().decode(errors="replace")
    r = parse_spawn(resfile)
    os.unlink(resfile)
    if "status" not in r:
        return Proc(p.returncode if p.returncode else 70, 0.0, 0, out,
                    err + "\nnpbench_spawn reported nothing", False)
    return Proc(int(r["status"]), float(r["wall_s"]), int(r["maxrss_kb"]), out, err,
                r.get("timed_out") == "1", float(r["user_s"]) + float(r["sys_s"]))


def child_env(alloc, preload_extra=(), extra=None):
    """The environment of a measured process: npbench_spawn turns NPBENCH_PRELOAD into the
    command's LD_PRELOAD."""
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "NPBENCH_PRELOAD", "MALLOC_CONF", "MIMALLOC_OPTIONS", "PYTHONMALLOC",
              "MALLOC_ARENA_MAX", "TCMALLOC_RELEASE_RATE", "MALLOC_PERTURB_", "MALLOC_CHECK_"):
        env.pop(k, None)
    pre = alloc.preload(preload_extra)
    if pre:
        env["NPBENCH_PRELOAD"] = pre
    if extra:
        env.update(extra)
    return env


def exe_name(prog):
    """The file name a program runs as (/usr/bin/redis-server is a link to redis-check-rdb)."""
    path = shutil.which(prog) or prog
    return os.path.basename(os.path.realpath(path))


def kv(line):
    out = {}
    for tok in line.split():
        k, eq, v = tok.partition("=")
        if eq:
            out[k] = v
    return out


# ---- the suite --------------------------------------------------------------------------------

class Suite:
    def __init__(self, args):
        self.a = args
        self.build = os.path.abspath(args.build_dir)
        self.npbench = os.path.join(self.build, "bench", "npbench")
        self.page_bench = os.path.join(self.build, "bench", "page_bench")
        self.vmstat_bench = os.path.join(self.build, "bench", "vmstat_bench")
        self.probe = os.path.join(self.build, "bench", "libnpbench_probe.so")
        self.host_costs = os.path.join(self.build, "bench", "host_costs")
        self.glibc_shim = os.path.join(self.build, "bench", "libnpbench_glibc.so")
        global SPAWN
        SPAWN = os.path.join(self.build, "bench", "npbench_spawn")
        self.out = args.out
        self.work = os.path.join(self.out, "work")
        os.makedirs(self.work, exist_ok=True)
        self.logdir = os.path.join(self.out, "logs")
        os.makedirs(self.logdir, exist_ok=True)
        self.notes = []
        self.runs = []
        self.page_runs = []
        self.failures = []
        self.python = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) \
            else shutil.which("python3")
        self.ld = ldconfig_paths()
        self.libc = self.ld.get("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")
        self.prepared = {}

    # -- allocators --
    def allocators(self):
        allocs = []
        lib = os.path.abspath(self.a.lib)
        allocs.append(Allocator(BASELINE, lib))
        for name, soname in DEBIAN_ALLOCATORS:
            if soname is None:
                allocs.append(Allocator(name, None, expect=self.libc))
            else:
                allocs.append(Allocator(name, self.ld.get(soname)))
        chosen = set(self.a.allocators.split(",")) if self.a.allocators else None
        usable = []
        for al in allocs:
            if chosen and al.name not in chosen:
                continue
            if al.name != "glibc" and (not al.path or not os.path.exists(al.path)):
                self.notes.append("%s: not found (%s); skipped" % (al.name, al.path or "not installed"))
                continue
            r = run_proc([self.npbench, "which"], child_env(al), 30)
            owner = kv(r.out).get("malloc")
            if r.rc != 0:
                msg = "%s: preflight `npbench which` failed: %s: %s" % (al.name, r.why(), r.err.strip()[-300:])
                self.notes.append(msg + "; skipped")
                self.failures.append(msg)
                continue
            if realpath(owner) != al.expect:
                self.notes.append("%s: preload did not take effect (malloc is defined by %s, not %s); "
                                  "skipped%s" % (al.name, owner, al.expect,
                                                 " - does it export malloc?" if al.name == BASELINE else ""))
                continue
            usable.append(al)
        return usable

    # -- one run of one benchmark --
    def run_c(self, alloc, wl, threads, scale):
        cmd = [self.npbench, wl, "--threads", str(threads), "--scale", repr(scale), "--seed", "42"]
        if not self.a.no_pin:
            cmd.append("--pin")
        r = run_proc(cmd, child_env(alloc), self.a.timeout)
        res = {"wall_s": r.wall, "maxrss_kb": r.maxrss_kb, "cpu_s": r.cpu}
        if r.rc != 0:
            return res, r, "%s: %s" % (r.why(), (r.err.strip() or r.out.strip())[-400:])
        line = [ln for ln in r.out.splitlines() if ln.startswith("workload=")]
        if not line:
            return res, r, "no result line"
        f = kv(line[-1])
        res.update(time_s=float(f["seconds"]), ops=int(f["ops"]), checksum=f["checksum"],
                   malloc=f.get("malloc", "?"))
        if realpath(res["malloc"]) != alloc.expect:
            return res, r, "preload not in effect: malloc from %s" % res["malloc"]
        return res, r, None

    def probe_check(self, alloc, probe_file, expect, must_see):
        try:
            with open(probe_file) as f:
                lines = [kv(ln) for ln in f if ln.strip()]
        except OSError:
            lines = []
        if not lines:
            return None, "probe saw no process (preload failed?)"
        bad = [ln for ln in lines if realpath(ln.get("malloc")) != expect]
        if bad:
            return None, "preload not in effect in %s: malloc from %s" % (bad[0].get("exe"), bad[0].get("malloc"))
        exes = sorted({os.path.basename(ln.get("exe", "?")) for ln in lines})
        for m in must_see:
            if not any(e.startswith(m) for e in exes):
                return None, "probe did not see %s (saw %s)" % (m, ",".join(exes))
        return exes, None

    def run_real(self, alloc, wl, scale):
        probe_file = os.path.join(self.work, "probe-%s-%s.txt" % (wl, alloc.name))
        if os.path.exists(probe_file):
            os.unlink(probe_file)
        fn = getattr(self, "real_" + wl)
        res, r, err = fn(alloc, scale, probe_file)
        if err is None:
            expect = alloc.expect
            if wl == "redis" and alloc.name == "glibc":
                expect = realpath(self.glibc_shim)
            exes, err = self.probe_check(alloc, probe_file, expect, res.pop("_must_see", []))
            if exes:
                res["malloc"] = "%s in %s" % (os.path.basename(expect), "+".join(exes))
        return res, r, err

    # -- real programs --
    def prepare(self, wl, scale):
        key = (wl, scale)
        if key not in self.prepared:
            self.prepared[key] = getattr(self, "prepare_" + wl)(scale)
        return self.prepared[key]

    def real_python(self, alloc, scale, probe_file):
        env = child_env(alloc, [self.probe], {"PYTHONMALLOC": "malloc", "NPBENCH_PROBE_OUT": probe_file})
        r = run_proc([self.python, os.path.join(HERE, "py_alloc.py"), "--scale", repr(scale)], env,
                     self.a.timeout)
        res = {"wall_s": r.wall, "time_s": r.wall, "maxrss_kb": r.maxrss_kb, "cpu_s": r.cpu,
               "_must_see": [exe_name(self.python)]}
        if r.rc != 0:
            return res, r, "%s: %s" % (r.why(), r.err.strip()[-400:])
        if "py_alloc: ok" not in r.out:
            return res, r, "no ok line"
        res["checksum"] = kv(r.out).get("checksum")
        return res, r, None

    def prepare_gcc(self, scale):
        """A C file of n functions whose combined result the generator computes as well."""
        n = max(40, int(350 * scale))
        rng = random.Random(42)
        M = 0xFFFFFFFF
        src = ["#include <stdint.h>", "#include <stdio.h>", ""]
        expect = 0
        for i in range(n):
            mul = rng.randrange(1, 1 << 32) | 1
            consts = [rng.randrange(1 << 32) for _ in range(8)]
            table = [rng.randrange(1 << 32) for _ in range(16)]
            rot = rng.randrange(1, 31)
            src.append("static const uint32_t t%d[16] = {%s};" % (i, ", ".join("%du" % t for t in table)))
            src.append("__attribute__((noinline)) static uint32_t f%d(uint32_t x)\n{" % i)
            src.append("\tuint32_t a = x * %du + %du;" % (mul, i))
            src.append("\tfor (int k = 0; k < 3; k++) {")
            src.append("\t\tswitch (a % 8) {")
            for c in range(8):
                op = ["a ^= %du;", "a += %du;", "a -= %du;", "a = a * 3u + %du;"][c % 4]
                src.append("\t\tcase %d: %s break;" % (c, op % consts[c]))
            src.append("\t\t}")
            src.append("\t\ta = (a << %d) | (a >> %d);" % (rot, 32 - rot))
            src.append("\t}")
            src.append("\treturn a + t%d[a %% 16];\n}" % i)
            # The same in Python.
            a = (i * mul + i) & M
            for _ in range(3):
                c = a % 8
                v = consts[c]
                if c % 4 == 0:
                    a ^= v
                elif c % 4 == 1:
                    a = (a + v) & M
                elif c % 4 == 2:
                    a = (a - v) & M
                else:
                    a = (a * 3 + v) & M
                a = ((a << rot) | (a >> (32 - rot))) & M
            expect = (expect + ((a + table[a % 16]) & M)) & M
        src.append("int main(void)\n{\n\tuint32_t s = 0;")
        for i in range(n):
            src.append("\ts += f%d(%du);" % (i, i))
        src.append('\tprintf("%u\\n", s);\n\treturn 0;\n}')
        path = os.path.join(self.work, "gen-%g.c" % scale)
        with open(path, "w") as f:
            f.write("\n".join(src) + "\n")
        return {"src": path, "expect": str(expect)}

    def real_gcc(self, alloc, scale, probe_file):
        prep = self.prepare("gcc", scale)
        exe = os.path.join(self.work, "gen-%s" % alloc.name)
        if os.path.exists(exe):
            os.unlink(exe)
        env = child_env(alloc, [self.probe], {"NPBENCH_PROBE_OUT": probe_file})
        r = run_proc(["gcc", "-O2", "-o", exe, prep["src"]], env, self.a.timeout)
        res = {"wall_s": r.wall, "time_s": r.wall, "maxrss_kb": r.maxrss_kb, "cpu_s": r.cpu,
               "_must_see": ["cc1"]}
        if r.rc != 0:
            return res, r, "%s: %s" % (r.why(), r.err.strip()[-400:])
        out = subprocess.run([exe], capture_output=True, text=True, check=False,
                             env=child_env(Allocator("glibc", None))).stdout.strip()
        if out != prep["expect"]:
            return res, r, "compiled program printed %r, expected %s" % (out, prep["expect"])
        res["checksum"] = out
        return res, r, None

    def prepare_sqlite(self, scale):
        """An SQL script and the output it must give, computed here from the same formulas."""
        n = max(2000, int(200000 * scale))
        stmts = [".mode list", ".separator |", "PRAGMA cache_size = -200000;",
                 "CREATE TABLE t(id INTEGER PRIMARY KEY, grp INT, name TEXT, val INT);",
                 "BEGIN;"]
        rows = {}
        direct = n // 10   # parsed one statement each, the rest from a recursive CTE
        for i in range(1, direct + 1):
            g, name, val = i % 97, "n%d" % (i * 7 % 1000), i * 2654435761 % 1000003
            rows[i] = [g, name, val]
            stmts.append("INSERT INTO t VALUES(%d, %d, '%s', %d);" % (i, g, name, val))
        stmts.append("WITH RECURSIVE c(i) AS (SELECT %d UNION ALL SELECT i + 1 FROM c WHERE i < %d) "
                     "INSERT INTO t SELECT i, i %% 97, 'n' || (i * 7 %% 1000), i * 2654435761 %% 1000003 "
                     "FROM c;" % (direct + 1, n))
        for i in range(direct + 1, n + 1):
            rows[i] = [i % 97, "n%d" % (i * 7 % 1000), i * 2654435761 % 1000003]
        stmts.append("COMMIT;")
        expect = []
        stmts.append("SELECT count(*), sum(val) FROM t;")
        expect.append("%d|%d" % (len(rows), sum(r[2] for r in rows.values())))
        stmts.append("SELECT grp, count(*), sum(val) FROM t GROUP BY grp ORDER BY sum(val) DESC, grp LIMIT 5;")
        groups = {}
        for r in rows.values():
            c = groups.setdefault(r[0], [0, 0])
            c[0] += 1
            c[1] += r[2]
        for g, c in sorted(groups.items(), key=lambda kv_: (-kv_[1][1], kv_[0]))[:5]:
            expect.append("%d|%d|%d" % (g, c[0], c[1]))
        stmts.append("CREATE INDEX t_name ON t(name);")
        stmts.append("SELECT count(DISTINCT name) FROM t;")
        expect.append(str(len({r[1] for r in rows.values()})))
        stmts.append("UPDATE t SET val = val % 1000 WHERE grp < 10;")
        for r in rows.values():
            if r[0] < 10:
                r[2] %= 1000
        stmts.append("SELECT sum(val) FROM t;")
        expect.append(str(sum(r[2] for r in rows.values())))
        stmts.append("DELETE FROM t WHERE id % 3 = 0;")
        for i in [i for i in rows if i % 3 == 0]:
            del rows[i]
        stmts.append("SELECT count(*) FROM t;")
        expect.append(str(len(rows)))
        stmts.append("CREATE TABLE g AS SELECT grp, sum(val) AS s FROM t GROUP BY grp;")
        gs = {}
        for r in rows.values():
            gs[r[0]] = gs.get(r[0], 0) + r[2]
        stmts.append("SELECT sum(g.s % 1000), count(*) FROM t JOIN g USING(grp);")
        expect.append("%d|%d" % (sum(gs[r[0]] % 1000 for r in rows.values()), len(rows)))
        stmts.append("SELECT name || '-' || val AS k FROM t ORDER BY k DESC, id LIMIT 3;")
        keyed = sorted(((r[1] + "-" + str(r[2]), i) for i, r in rows.items()), key=lambda x: x[1])
        keyed.sort(key=lambda x: x[0], reverse=True)
        expect.extend(k for k, _ in keyed[:3])
        stmts.append("SELECT length(group_concat(name, ',')) FROM (SELECT name FROM t ORDER BY id);")
        expect.append(str(sum(len(r[1]) for r in rows.values()) + len(rows) - 1))
        path = os.path.join(self.work, "sqlite-%g.sql" % scale)
        with open(path, "w") as f:
            f.write("\n".join(stmts) + "\n")
        return {"script": path, "expect": "\n".join(expect)}

    def real_sqlite(self, alloc, scale, probe_file):
        prep = self.prepare("sqlite", scale)
        env = child_env(alloc, [self.probe], {"NPBENCH_PROBE_OUT": probe_file})
        r = run_proc(["sqlite3", ":memory:"], env, self.a.timeout, stdin_path=prep["script"])
        res = {"wall_s": r.wall, "time_s": r.wall, "maxrss_kb": r.maxrss_kb, "cpu_s": r.cpu,
               "_must_see": [exe_name("sqlite3")]}
        if r.rc != 0 or r.err.strip():
            return res, r, "%s: %s" % (r.why(), r.err.strip()[-400:])
        if r.out.strip() != prep["expect"]:
            return res, r, "sqlite3 output differs from the expected:\n%s\n--- expected:\n%s" % (
                r.out.strip()[-500:], prep["expect"][-500:])
        res["checksum"] = str(len(r.out))
        return res, r, None

    def real_redis(self, alloc, scale, probe_file):
        """redis-server (allocator under test) on a unix socket, redis-benchmark (not preloaded)
        with a bounded request count, then a read-back check and SHUTDOWN; RSS is the server's."""
        tmp = tempfile.mkdtemp(prefix="npbench-redis-")
        sock = os.path.join(tmp, "redis.sock")
        logf = os.path.join(tmp, "redis.log")
        preload = [self.glibc_shim] if alloc.name == "glibc" else []
        env = child_env(alloc, preload + [self.probe], {"NPBENCH_PROBE_OUT": probe_file})
        plain = child_env(Allocator("glibc", None))
        fd, spawn_res = tempfile.mkstemp(prefix="npbench-spawn-")
        os.close(fd)
        server = subprocess.Popen([SPAWN, spawn_res, str(int(self.a.timeout) + 60),
                                   "redis-server", "--port", "0", "--unixsocket", sock,
                                   "--unixsocketperm", "700", "--save", "", "--appendonly", "no",
                                   "--daemonize", "no", "--dir", tmp, "--logfile", logf],
                                  env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)

        def alive():
            return server.poll() is None

        def cli(*args):
            return subprocess.run(["redis-cli", "-s", sock] + list(args), capture_output=True,
                                  text=True, check=False, env=plain, timeout=30)

        res = {"wall_s": 0.0, "time_s": 0.0, "maxrss_kb": 0, "_must_see": [exe_name("redis-server")]}
        err = None
        r = None
        try:
            for _ in range(200):
                if not alive() or (os.path.exists(sock) and cli("PING").stdout.strip() == "PONG"):
                    break
                time.sleep(0.05)
            else:
                err = "server did not answer PING"
            if not alive():
                err = "server exited at start-up"
            if err is None:
                n = max(2000, int(30000 * scale))
                r = run_proc(["redis-benchmark", "-s", sock, "-n", str(n), "-c", "32", "-P", "8",
                              "-r", "100000", "-d", "128", "-q", "--csv", "-t",
                              "set,get,incr,lpush,rpop,sadd,hset,spop,zadd,lrange_100,mset"],
                             plain, self.a.timeout)
                res["wall_s"] = res["time_s"] = r.wall
                if r.rc != 0:
                    err = "redis-benchmark %s: %s" % (r.why(), r.err.strip()[-300:])
                elif not alive():
                    err = "server died during the benchmark"
            if err is None:
                value = "npbench-%d-" % os.getpid() * 50
                cli("SET", "npbench:check", value)
                got = cli("GET", "npbench:check").stdout.strip()
                size = cli("DBSIZE").stdout.strip()
                if got != value:
                    err = "GET returned a different value"
                elif not size.isdigit() or int(size) < 2:
                    err = "DBSIZE is %r after the benchmark" % size
                else:
                    res["checksum"] = size
        finally:
            if alive():
                cli("SHUTDOWN", "NOSAVE")
                try:
                    server.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(server.pid, signal.SIGKILL)
                    server.wait()
        st = parse_spawn(spawn_res)
        os.unlink(spawn_res)
        res["maxrss_kb"] = int(st.get("maxrss_kb", 0))
        if "user_s" in st:
            res["cpu_s"] = float(st["user_s"]) + float(st["sys_s"])  # the server's
        if err is None and st.get("status") != "0":
            err = "server exit status %s" % st.get("status", "unknown")
        if err:
            try:
                with open(logf) as f:
                    err += " | server log: " + f.read()[-600:].replace("\n", " ")
            except OSError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)
        return res, r or Proc(0, 0, 0, "", "", False), err

    # -- page API --
    def run_page(self, alloc, scale, threads):
        env = child_env(alloc, (), {"NPBENCH_NUMAPAGE_LIB": alloc.path})
        r = run_proc([self.page_bench, "--scale", repr(scale), "--threads", threads], env,
                     self.a.timeout)
        if r.rc == 77:
            return None, r.out.strip() or "skipped"
        if r.rc != 0:
            lines = r.out.strip().splitlines()
            return None, "page_bench %s%s: %s" % (
                r.why(), " after: " + lines[-1] if lines else " before any measurement",
                r.err.strip()[-400:])
        rows = [kv(ln) for ln in r.out.splitlines() if ln.startswith("page ")]
        return rows, None

    # -- the schedule --
    def specs(self):
        only = set(self.a.only.split(",")) if self.a.only else None
        skip = set(self.a.skip.split(",")) if self.a.skip else set()
        specs = []
        for wl in C_WORKLOADS:
            if (only and wl not in only) or wl in skip:
                continue
            for t in self.threads:
                specs.append((wl, t))
        for wl in REAL_WORKLOADS:
            if (only and wl not in only) or wl in skip:
                continue
            specs.append((wl, 1))
        return specs

    def real_available(self, wl):
        need = {"python": [self.python], "gcc": ["gcc"], "sqlite": ["sqlite3"],
                "redis": ["redis-server", "redis-benchmark", "redis-cli"]}[wl]
        missing = [x for x in need if not x or not shutil.which(x)]
        if missing:
            self.notes.append("%s: %s not installed; skipped" % (wl, ", ".join(str(m) for m in missing)))
            return False
        return True

    def run(self):
        for exe in (self.npbench, SPAWN, self.probe, self.glibc_shim):
            if not os.path.exists(exe):
                sys.exit("run.py: %s is missing: build first (meson setup %s && ninja -C %s)"
                         % (exe, self.a.build_dir, self.a.build_dir))
        ncpu = os.cpu_count() or 1
        self.threads = sorted({ncpu if t in ("N", "n", "nproc") else int(t)
                               for t in self.a.threads.split(",")})
        self.allocs = self.allocators()
        if not self.allocs:
            sys.exit("run.py: no allocator usable:\n  " + "\n  ".join(self.notes))
        names = [al.name for al in self.allocs]
        self.baseline = BASELINE if BASELINE in names else ("glibc" if "glibc" in names else names[0])
        if self.baseline != BASELINE:
            self.notes.append("libnumapage is not in this run: ratios are to %s" % self.baseline)
        specs = [s for s in self.specs() if s[0] in C_WORKLOADS or self.real_available(s[0])]
        want_page = (not self.a.only or "page-api" in self.a.only.split(",")) and \
            "page-api" not in (self.a.skip or "").split(",")
        page_alloc = next((al for al in self.allocs if al.name == BASELINE), None)
        if want_page and not page_alloc:
            self.notes.append("page-api: needs libnumapage; skipped")
        total = len(specs) * len(self.allocs) * self.a.rounds
        log("run.py: %d benchmarks x %d allocators (%s) x %d rounds = %d runs, scale %g, threads %s"
            % (len(specs), len(self.allocs), ", ".join(names), self.a.rounds, total, self.a.scale,
               ",".join(map(str, self.threads))))
        done = 0
        t_start = time.time()
        for rnd in range(self.a.rounds):
            for si, (wl, t) in enumerate(specs):
                k = (rnd + si) % len(self.allocs)
                order = self.allocs[k:] + self.allocs[:k]
                for al in order:
                    if wl in C_WORKLOADS:
                        res, r, err = self.run_c(al, wl, t, self.a.scale)
                    else:
                        res, r, err = self.run_real(al, wl, self.a.scale)
                    done += 1
                    row = {"round": rnd + 1, "workload": wl, "threads": t, "allocator": al.name,
                           "ok": err is None, "error": err or "", "time_s": res.get("time_s"),
                           "wall_s": res.get("wall_s"), "cpu_s": res.get("cpu_s"),
                           "maxrss_kb": res.get("maxrss_kb"),
                           "ops": res.get("ops"), "checksum": res.get("checksum"),
                           "malloc": res.get("malloc")}
                    self.runs.append(row)
                    status = "%.3fs %.1fMB" % (row["time_s"], row["maxrss_kb"] / 1024) if err is None \
                        else "FAILED: " + err.splitlines()[0][:200]
                    log("[%d/%d %4.0fs] round %d %-13s t=%-3d %-11s %s" % (
                        done, total, time.time() - t_start, rnd + 1, wl, t, al.name, status))
                    if err:
                        self.failures.append("round %d %s threads=%d %s: %s" % (rnd + 1, wl, t, al.name, err))
                        path = os.path.join(self.logdir, "%s-t%d-%s-r%d.log" % (wl, t, al.name, rnd + 1))
                        with open(path, "w") as f:
                            f.write("error: %s\n--- stdout\n%s\n--- stderr\n%s\n" % (err, r.out, r.err))
            if want_page and page_alloc:
                pthreads = "1,%d" % ncpu if ncpu > 1 else "1"
                rows, err = self.run_page(page_alloc, self.a.scale, pthreads)
                if rows is None:
                    if "skipped" in err:
                        if rnd == 0:
                            self.notes.append("page-api: " + err)
                    else:
                        self.failures.append("round %d page-api: %s" % (rnd + 1, err))
                    log("round %d page-api: %s" % (rnd + 1, err))
                else:
                    for row in rows:
                        row["round"] = rnd + 1
                    self.page_runs.extend(rows)
                    log("round %d page-api: %d measurements" % (rnd + 1, len(rows)))
        self.check_checksums()
        self.vmstat_output = self.run_vmstat()
        return self

    def check_checksums(self):
        """Same workload, threads, scale and seed: every allocator must compute the same result."""
        seen = {}
        for r in self.runs:
            if not r["ok"] or r["checksum"] is None or r["workload"] in ("redis",):
                continue
            seen.setdefault((r["workload"], r["threads"]), set()).add(str(r["checksum"]))
        for key, sums in sorted(seen.items()):
            if len(sums) > 1:
                self.failures.append("%s threads=%d: checksums differ between runs: %s" % (
                    key[0], key[1], ", ".join(sorted(sums))))

    def run_vmstat(self):
        if not os.path.exists(self.vmstat_bench):
            return None
        if self.a.only and "vmstat" not in self.a.only.split(","):
            return None
        if self.a.skip and "vmstat" in self.a.skip.split(","):
            return None
        # vmstat_bench [-m EVENTS_PER_THREAD] [-t MAX_THREADS] [-r ROUNDS]
        args = [self.vmstat_bench, "-m", str(max(10000, int(5000000 * self.a.scale))),
                "-t", str(max(self.threads)), "-r", "1" if self.a.quick else "3"]
        r = run_proc(args, child_env(Allocator("glibc", None)), self.a.timeout)
        if r.rc != 0:
            self.failures.append("vmstat_bench: %s: %s" % (r.why(), r.err.strip()[-300:]))
        return r.out.strip()


# ---- statistics and reports -------------------------------------------------------------------

class Report:
    """What the reports are made of: a finished run, or one loaded back from its runs.json."""

    def __init__(self, out, meta, runs, page_runs, notes, failures):
        self.out, self.meta, self.runs, self.page_runs = out, meta, runs, page_runs
        self.notes, self.failures = notes, failures
        self.names = meta["order"]
        self.baseline = meta["baseline"]
        self.rounds = meta["rounds"]
        self.scale = meta["scale"]
        self.threads = meta["threads"]
        self.vmstat_output = meta.get("vmstat_output")

    @classmethod
    def load(cls, out):
        with open(os.path.join(out, "runs.json")) as f:
            doc = json.load(f)
        return cls(os.path.abspath(out), doc["meta"], doc["runs"], doc["page_runs"], doc["notes"],
                   doc["failures"])


def summarize(suite):
    """(workload, threads) -> allocator -> {median, min, max, rss} over the successful rounds, and
    by_round: round -> time."""
    groups = {}
    for r in suite.runs:
        g = groups.setdefault((r["workload"], r["threads"]), {}).setdefault(
            r["allocator"], {"t": [], "rss": [], "cpu": [], "fail": [], "by_round": {}})
        if r["ok"]:
            g["t"].append(r["time_s"])
            g["by_round"][r["round"]] = r["time_s"]
            g["rss"].append(r["maxrss_kb"])
            if r.get("cpu_s") is not None:
                g["cpu"].append(r["cpu_s"])
        else:
            g["fail"].append(r["error"].splitlines()[0][:80])
    out = {}
    for key, per in groups.items():
        out[key] = {}
        for al, g in per.items():
            s = {"n": len(g["t"]), "fail": g["fail"], "by_round": g["by_round"]}
            if g["t"]:
                s.update(median=statistics.median(g["t"]), min=min(g["t"]), max=max(g["t"]),
                         rss=statistics.median(g["rss"]), rss_min=min(g["rss"]), rss_max=max(g["rss"]))
            if g["cpu"]:
                s["cpu"] = statistics.median(g["cpu"])
            out[key][al] = s
    return out


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def bench_order(summary):
    order = {w: i for i, w in enumerate(ALL_WORKLOADS)}
    return sorted(summary, key=lambda k: (order.get(k[0], 99), k[1]))


def label(key):
    wl, t = key
    return wl if wl in REAL_WORKLOADS else "%s/%d" % (wl, t)


def fmt_time(s):
    if s >= 100:
        return "%.0f" % s
    if s >= 10:
        return "%.1f" % s
    if s >= 1:
        return "%.2f" % s
    return "%.3f" % s


def ratios(summary, names, base, what="median", multi_only=False):
    """allocator -> list of allocator/baseline ratios over the benchmarks both completed."""
    out = {n: [] for n in names}
    for key, per in summary.items():
        if multi_only and (key[0] in REAL_WORKLOADS or key[1] < 2):
            continue
        b = per.get(base, {})
        if what not in b:
            continue
        for n in names:
            x = per.get(n, {})
            if what in x and b[what] > 0:
                out[n].append(x[what] / b[what])
    return out


def ratio_table(summary, keys, names, base, what, fmt):
    """Markdown rows of one measure (what: "median" or "rss") per benchmark and allocator:
    fmt(stats) as the cell, then each allocator's ratio to base."""
    L = ["| benchmark | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for key in keys:
        per = summary[key]
        b = per.get(base, {})
        cells = []
        for n in names:
            s = per.get(n, {})
            if what not in s:
                cells.append("FAIL" if s.get("fail") else "-")
                continue
            c = fmt(s)
            if n != base and what in b and b[what] > 0:
                c += " ×%.2f" % (s[what] / b[what])
            cells.append(c)
        L.append("| %s | %s |" % (label(key), " | ".join(cells)))
    return L


def time_cell(s):
    c = "%s (%s–%s)" % (fmt_time(s["median"]), fmt_time(s["min"]), fmt_time(s["max"]))
    if s.get("fail"):
        c += " %d FAIL" % len(s["fail"])
    return c


def markdown(suite, summary):
    names = suite.names
    base = suite.baseline
    keys = bench_order(summary)
    L = []
    L.append("Time is the median of %d round(s) in seconds (min-max in parentheses); ×r is the "
             "allocator's median divided by %s's: above 1, %s is faster. The npbench workloads are "
             "timed inside the program (the work only); the real programs by wall clock "
             "(redis: the redis-benchmark client). Peak RSS is ru_maxrss of the process and its "
             "waited-for children (redis: the server)." % (suite.rounds, base, base))
    L.append("")
    L.append("### Time")
    L.append("")
    L += ratio_table(summary, keys, names, base, "median", time_cell)
    for title, multi in (("geometric mean ×r, all", False), ("geometric mean ×r, multi-threaded", True)):
        rs = ratios(summary, names, base, "median", multi)
        L.append("| *%s* | %s |" % (title, " | ".join(
            "-" if n == base or not rs[n] else "×%.2f" % geomean(rs[n]) for n in names)))
    L.append("")
    L.append("### Peak RSS")
    L.append("")
    L += ratio_table(summary, keys, names, base, "rss", lambda s: "%.1f MB" % (s["rss"] / 1024))
    rs = ratios(summary, names, base, "rss")
    L.append("| *geometric mean ×r* | %s |" % " | ".join(
        "-" if n == base or not rs[n] else "×%.2f" % geomean(rs[n]) for n in names))
    L.append("")
    if base == BASELINE:
        L.append("### Targets (issue 7)")
        L.append("")
        L.append("| target | measured |")
        L.append("|---|---:|")
        for desc, other, what, multi, goal in (
                ("time libnumapage/mimalloc, geometric mean, all ≤ 1.00", "mimalloc", "median", False, 1.0),
                ("time libnumapage/glibc, geometric mean, multi-threaded ≤ 0.50", "glibc", "median", True, 0.5),
                ("peak RSS libnumapage/mimalloc, geometric mean ≤ 1.10", "mimalloc", "rss", False, 1.1)):
            if other not in names:
                continue
            rs = ratios(summary, [other], BASELINE, what, multi)[other]
            g = geomean(rs)
            if g:
                inv = 1 / g
                L.append("| %s | %.2f %s |" % (desc, inv, "met" if inv <= goal else "not met"))
        L.append("")
        L.extend(best_peer_markdown(suite, summary, keys))
    if suite.page_runs:
        L.extend(page_markdown(suite))
    if suite.vmstat_output:
        L.append("### Statistics counters (vmstat_bench)")
        L.append("")
        L.append("```")
        L.append(suite.vmstat_output)
        L.append("```")
        L.append("")
    if suite.notes:
        L.append("### Notes")
        L.append("")
        L.extend("- " + n for n in suite.notes)
        L.append("")
    if suite.failures:
        L.append("### Failures")
        L.append("")
        L.extend("- " + f.replace("\n", " ")[:600] for f in suite.failures)
        L.append("")
    return "\n".join(L)


BEST_PEER_LIMIT = 1.25  # issue 15: no workload more than 1.25x the best peer's time


def paired_ratio(mine, other):
    """The median over the rounds both ran of mine's time over other's in the same round, and the
    number of such rounds ((None, 0) without one). A round runs one workload under every
    allocator back to back, so a drift of the machine's speed between rounds cancels in each
    round's ratio; a ratio of two medians can take them from rounds of different speeds
    (docs/perf-issue15.md, section 26)."""
    a, b = mine.get("by_round", {}), other.get("by_round", {})
    rs = [a[k] / b[k] for k in a if k in b and b[k] > 0]
    return (statistics.median(rs), len(rs)) if rs else (None, 0)


def best_peer_markdown(suite, summary, keys):
    """Issue 15's targets: libnumapage's time geometric mean at or below each peer's, its peak-RSS
    geometric mean at or below mimalloc's, and no benchmark above 1.25x the best peer's median
    time; then every benchmark's ratio to its best peer, those over the limit marked."""
    names = suite.names
    peers = [n for n in names if n != BASELINE]
    if BASELINE not in names or not peers:
        return []
    L = ["### Targets (issue 15)", "", "| target | measured |", "|---|---:|"]
    for n in peers:
        g = geomean(ratios(summary, [n], BASELINE, "median")[n])
        if g:
            L.append("| time libnumapage/%s, geometric mean, all ≤ 1.00 | %.2f %s |" % (
                n, 1 / g, "met" if 1 / g <= 1.0 else "not met"))
    if "mimalloc" in names:
        g = geomean(ratios(summary, ["mimalloc"], BASELINE, "rss")["mimalloc"])
        if g:
            L.append("| peak RSS libnumapage/mimalloc, geometric mean ≤ 1.00 | %.2f %s |" % (
                1 / g, "met" if 1 / g <= 1.0 else "not met"))
    rows, over, over_paired, unpaired = [], 0, 0, 0
    for key in keys:
        per = summary[key]
        b = per.get(BASELINE, {})
        best = min(((per[n]["median"], n) for n in peers if "median" in per.get(n, {})), default=None)
        if "median" not in b or not best or best[0] <= 0:
            continue
        r = b["median"] / best[0]
        mark = " **over**" if r > BEST_PEER_LIMIT else ""
        over += bool(mark)
        pr, pairs = paired_ratio(b, per[best[1]])
        pmark = " **over**" if pr is not None and pr > BEST_PEER_LIMIT else ""
        over_paired += bool(pmark)
        unpaired += pr is None
        paired = "%.2f%s" % (pr, pmark) if pr is not None else "-"
        if pr is not None and pairs < suite.rounds:
            paired += " (%d of %d rounds)" % (pairs, suite.rounds)
        bc = per[best[1]].get("cpu")
        cpu = "%.2f" % (b["cpu"] / bc) if b.get("cpu") and bc else "-"
        rows.append("| %s | %s | %s %s | %.2f%s | %s | %s |" % (label(key), fmt_time(b["median"]), best[1],
                                                                fmt_time(best[0]), r, mark, paired, cpu))
    L.append("| benchmarks above %.2fx the best peer's time | %d of %d %s |" % (
        BEST_PEER_LIMIT, over, len(rows), "met" if over == 0 else "not met"))
    L.append("| the same, each round's ratio to that peer, median over the rounds | %d of %d%s %s |" % (
        over_paired, len(rows) - unpaired,
        " (%d without a round both ran)" % unpaired if unpaired else "",
        "met" if over_paired == 0 and unpaired == 0 else "not met"))
    L += ["", "Time of libnumapage over the best peer's (the fastest other allocator's median); "
          "**over**: above %.2f. cpu: the same ratio of the median CPU time (user + system of the "
          "whole process, start-up included): on a busy machine wall time also counts the time a "
          "process waited for a CPU, CPU time does not (it keeps spinning and the kernel's work). "
          "paired: libnumapage's time over that peer's in the same round, the median over the rounds: "
          "a round runs the workload under every allocator back to back, so a change of the "
          "machine's speed between rounds (a shared or virtual machine has fast and slow phases) cancels in it, "
          "where the ratio of medians may take the two from different phases."
          % BEST_PEER_LIMIT, "",
          "| benchmark | libnumapage | best peer | libnumapage / best | paired | cpu: libnumapage / best |",
          "|---|---:|---:|---:|---:|---:|"]
    L += rows
    L.append("")
    return L


def page_markdown(suite):
    agg = {}
    cpu = {}
    for r in suite.page_runs:
        key = (r["mode"], int(r["threads"]), int(r["size"]))
        agg.setdefault(key, {}).setdefault(r["api"], []).append(float(r["ns"]))
        if r["api"] == "numapage" and "cpu_ns" in r:
            cpu.setdefault(key, []).append(float(r["cpu_ns"]))
    L = ["### Page API (ns per alloc+free pair, median of %d round(s))" % suite.rounds, "",
         "bare: allocate and free; touch: also write one byte per page. ×r: that API's time / "
         "numa_page_alloc_onnode's. numapage cpu: the thread's CPU time per pair (on a busy "
         "machine, wall time at 2+ threads also counts waiting for a CPU; CPU time keeps lock "
         "spinning).", "",
         "| mode | threads | size | numapage | numapage cpu | libnuma numa_alloc_onnode | mmap+mbind |",
         "|---|---:|---:|---:|---:|---:|---:|"]
    for key in sorted(agg):
        per = {api: statistics.median(v) for api, v in agg[key].items()}
        b = per.get("numapage")
        cells = []
        for api in ("numapage", "libnuma", "mmap+mbind"):
            if api not in per:
                cells.append("-")
            elif api == "numapage" or not b:
                cells.append("%.0f" % per[api])
            else:
                cells.append("%.0f ×%.1f" % (per[api], per[api] / b))
        cells.insert(1, "%.0f" % statistics.median(cpu[key]) if key in cpu else "-")
        size = key[2]
        L.append("| %s | %d | %s | %s |" % (key[0], key[1],
                                             "%d KiB" % (size // 1024), " | ".join(cells)))
    L.append("")
    return L


def write_csv_json(suite, summary):
    fields = ["round", "workload", "threads", "allocator", "ok", "time_s", "wall_s", "cpu_s", "maxrss_kb",
              "ops", "checksum", "malloc", "error"]
    with open(os.path.join(suite.out, "runs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in suite.runs:
            w.writerow({k: r.get(k) for k in fields})
    if suite.page_runs:
        with open(os.path.join(suite.out, "page_runs.csv"), "w", newline="") as f:
            fields_p = ["round", "api", "mode", "size", "threads", "iters", "ns", "cpu_ns"]
            w = csv.DictWriter(f, fieldnames=fields_p, extrasaction="ignore")
            w.writeheader()
            w.writerows(suite.page_runs)
    doc = {"meta": suite.meta, "runs": suite.runs, "page_runs": suite.page_runs,
           "summary": [{"workload": k[0], "threads": k[1], "allocator": al, **s}
                       for k, per in summary.items() for al, s in per.items()],
           "notes": suite.notes, "failures": suite.failures}
    with open(os.path.join(suite.out, "runs.json"), "w") as f:
        json.dump(doc, f, indent=1)


def charts(suite, summary):
    """time.png and rss.png: every allocator's median relative to the baseline, per benchmark,
    on a log scale, with min-max whiskers; panels of at most 12 benchmarks stacked."""
    gp = shutil.which("gnuplot")
    if not gp:
        suite.notes.append("gnuplot not installed: no charts")
        return []
    names = suite.names
    base = suite.baseline
    keys = [k for k in bench_order(summary) if "median" in summary[k].get(base, {})]
    if not keys:
        return []
    per_panel = 12
    panels = [keys[i:i + per_panel] for i in range(0, len(keys), per_panel)]
    made = []
    for what, ylabel in (("time", "time / %s" % base), ("rss", "peak RSS / %s" % base)):
        plots_all = []
        lo, hi = 1.0, 1.0
        for pi, panel in enumerate(panels):
            dat = os.path.join(suite.out, "%s-%d.dat" % (what, pi + 1))
            with open(dat, "w") as f:
                f.write("# benchmark " + " ".join("%s %s_min %s_max" % (n, n, n) for n in names) + "\n")
                for k in panel:
                    per = summary[k]
                    bv = per[base]["median" if what == "time" else "rss"]
                    cols = []
                    for n in names:
                        s_ = per.get(n, {})
                        if what == "time" and "median" in s_:
                            cols += [s_["median"] / bv, s_["min"] / bv, s_["max"] / bv]
                        elif what == "rss" and "rss" in s_:
                            cols += [s_["rss"] / bv, s_["rss_min"] / bv, s_["rss_max"] / bv]
                        else:
                            cols += ["NaN", "NaN", "NaN"]
                    for c in cols:
                        if not isinstance(c, str):
                            lo, hi = min(lo, c), max(hi, c)
                    f.write('"%s" %s\n' % (label(k), " ".join(
                        c if isinstance(c, str) else "%.5g" % c for c in cols)))
            plots = []
            for i, n in enumerate(names):
                col = 2 + 3 * i
                src = "'%s'" % dat if i == 0 else "''"
                plots.append("%s using %d:%d:%d:xtic(1) title '%s'" % (src, col, col + 1, col + 2, n))
            plots_all.append("plot " + ", \\\n     ".join(plots)
                             + ", 1 with lines lc rgb 'black' dt 2 notitle")
        # One y range for all panels, in powers of two around the data.
        ylo = 2.0 ** math.floor(math.log2(max(lo, 1e-3)))
        yhi = 2.0 ** math.ceil(math.log2(min(hi, 1e3)))
        if ylo == yhi:
            yhi *= 2
        png = os.path.join(suite.out, what + ".png")
        title = "%s relative to %s (log scale, lower is better; whiskers: min-max of %d rounds), %s" % (
            "Time" if what == "time" else "Peak RSS", base, suite.rounds,
            suite.meta["machine"].get("model", ""))
        script = [
            "set terminal pngcairo size 1500,%d noenhanced font ',11'" % (60 + 420 * len(panels)),
            "set output '%s'" % png,
            "set multiplot layout %d,1 title '%s'" % (len(panels), title),
            "set ylabel '%s'" % ylabel,
            "set style data histograms",
            "set style histogram errorbars gap 2 lw 1",
            "set style fill solid 0.85 border -1",
            "set boxwidth 0.9",
            "set logscale y 2",
            "set yrange [%g:%g]" % (ylo, yhi),
            "set grid ytics",
            "set xtics rotate by -30 left",
            "set key outside right top",
            "set bmargin 5",
        ]
        script += plots_all
        script.append("unset multiplot")
        gpf = os.path.join(suite.out, what + ".gp")
        with open(gpf, "w") as f:
            f.write("\n".join(script) + "\n")
        r = subprocess.run([gp, gpf], capture_output=True, text=True, check=False)
        if r.returncode != 0 or not os.path.exists(png):
            suite.notes.append("gnuplot failed on %s: %s" % (what, r.stderr.strip()[-300:]))
        else:
            made.append(png)
    return made


def header(suite):
    m = suite.meta
    mc = m["machine"]
    return [
        "- date: %s" % m["date"],
        "- machine: %s, %s CPUs, %s NUMA node(s), %s GiB, Linux %s" % (
            mc.get("model", "?"), mc.get("cpus"), mc.get("numa_nodes", "?"), mc.get("memory_gib", "?"),
            mc.get("kernel")),
        "- commit: %s" % m["commit"],
        "- command: `%s`" % m["command"],
        "- scale %g, threads %s, %d round(s), allocators in rotating order: %s" % (
            suite.scale, ",".join(map(str, suite.threads)), suite.rounds, ", ".join(suite.names)),
        "- npbench's workers %s" % {True: "pinned round robin over the CPUs (`--pin`)",
                                    False: "placed by the scheduler (`--no-pin`)"}.get(
            m.get("pinned"), "placed by the scheduler (a run before `--pin` existed)"),
        "- packages: %s" % ", ".join("%s %s" % kv_ for kv_ in sorted(m["packages"].items())),
        host_line(m.get("host")),
        "- run took %.0f s; load average (1, 5, 15 min) at start %s, at end %s (other work on the "
        "machine makes the numbers noisier)" % (m["elapsed_s"], m["loadavg_start"], m["loadavg_end"]),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "src", "libnumapage.so"),
                    help="libnumapage.so to test (default: build/src/libnumapage.so)")
    ap.add_argument("--build-dir", default=None,
                    help="build directory holding bench/npbench (default: the directory two levels "
                         "above --lib, else build/)")
    ap.add_argument("--quick", action="store_true",
                    help="tiny scale, 1 round, threads 1,2: proves the suite works, numbers mean little")
    ap.add_argument("--scale", type=float, default=None, help="work multiplier (default 1, --quick 0.02)")
    ap.add_argument("--threads", default=None, help="thread counts, N = CPU count (default 1,2,4,N)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (default 3, --quick 1)")
    ap.add_argument("--only", default=None, help="comma-separated workloads: %s" % ",".join(ALL_WORKLOADS))
    ap.add_argument("--skip", default=None, help="comma-separated workloads to leave out")
    ap.add_argument("--allocators", default=None,
                    help="comma-separated subset of: libnumapage,glibc,jemalloc,tcmalloc,mimalloc")
    ap.add_argument("--no-pin", action="store_true",
                    help="let the scheduler place npbench's workers (default: worker i on the i-th "
                         "CPU, round robin, for every allocator alike)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per run before it is killed")
    ap.add_argument("--out", default=None, help="output directory (default bench/out/<date-time>)")
    ap.add_argument("--write-results", action="store_true",
                    help="also write bench/RESULTS.md and bench/results/*.png")
    ap.add_argument("--report", metavar="DIR", default=None,
                    help="run nothing: rebuild summary.md and the charts from DIR/runs.json")
    a = ap.parse_args()
    if a.scale is None:
        a.scale = 0.02 if a.quick else 1.0
    if a.rounds is None:
        a.rounds = 1 if a.quick else 3
    if a.threads is None:
        a.threads = "1,2" if a.quick else "1,2,4,N"
    if a.rounds < 1:
        ap.error("--rounds must be >= 1")
    if a.build_dir is None:
        guess = os.path.dirname(os.path.dirname(os.path.abspath(a.lib)))
        a.build_dir = guess if os.path.exists(os.path.join(guess, "bench", "npbench")) \
            else os.path.join(ROOT, "build")
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    if a.report:
        a.out = a.report
    if a.out is None:
        a.out = os.path.join(HERE, "out", stamp)
    a.out = os.path.abspath(a.out)
    os.makedirs(a.out, exist_ok=True)

    if a.report:
        rep = Report.load(a.report)
    else:
        suite = Suite(a)
        t0 = time.time()
        suite.meta = {"date": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
                      "machine": machine_info(), "commit": git_commit(),
                      "packages": package_versions(),
                      "command": "python3 bench/run.py " + " ".join(sys.argv[1:]),
                      "scale": a.scale, "rounds": a.rounds, "loadavg_start": loadavg(),
                      "pinned": not a.no_pin,
                      "host": host_costs(suite.host_costs)}
        suite.run()
        suite.meta["elapsed_s"] = time.time() - t0
        suite.meta["loadavg_end"] = loadavg()
        suite.meta["threads"] = suite.threads
        suite.meta["allocators"] = {al.name: al.path or "(C library)" for al in suite.allocs}
        suite.meta["order"] = [al.name for al in suite.allocs]
        suite.meta["baseline"] = suite.baseline
        suite.meta["vmstat_output"] = suite.vmstat_output
        rep = Report(a.out, suite.meta, suite.runs, suite.page_runs, suite.notes, suite.failures)
        write_csv_json(rep, summarize(rep))
    summary = summarize(rep)
    pngs = charts(rep, summary)
    body = markdown(rep, summary)
    md = "\n".join(["# libnumapage benchmark run", ""] + header(rep) + [""] + [body])
    with open(os.path.join(rep.out, "summary.md"), "w") as f:
        f.write(md + "\n")
    latest = os.path.join(HERE, "out", "latest")
    if os.path.dirname(rep.out) == os.path.join(HERE, "out"):
        try:
            if os.path.islink(latest):
                os.unlink(latest)
            os.symlink(os.path.basename(rep.out), latest)
        except OSError:
            pass
    if a.write_results:
        resdir = os.path.join(HERE, "results")
        os.makedirs(resdir, exist_ok=True)
        links = []
        for p in pngs:
            shutil.copy(p, os.path.join(resdir, os.path.basename(p)))
            links.append("![%s](results/%s)" % (os.path.basename(p)[:-4], os.path.basename(p)))
        with open(os.path.join(HERE, "RESULTS.md"), "w") as f:
            f.write("\n".join(["# Benchmark results", "",
                               "The latest full run of `bench/run.py` (see README.md). Regenerate "
                               "with the command below; do not edit by hand.", ""]
                              + header(rep) + ["", body, ""] + links) + "\n")
    print(md)
    print("\nrun.py: results in %s" % rep.out)
    if rep.failures:
        print("run.py: %d failure(s):" % len(rep.failures), file=sys.stderr)
        for f_ in rep.failures:
            print("  " + f_.splitlines()[0][:300], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
