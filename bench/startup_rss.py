#!/usr/bin/env python3
"""startup_rss.py - runs bench/startup_rss under each allocator and says what is resident.

    python3 bench/startup_rss.py [--build-dir build] [--lib build/src/libnumapage.so]
                                 [--allocators libnumapage,glibc,mimalloc,...] [--snapshot main|end]

For every allocator: the resident KiB at main's first line and at the end, by mapping (a
library's text, read-only data, data; anonymous regions, named by the library whose data they
follow (its BSS) or by their size), and VmHWM. For libnumapage, the resident pages of its own
data and BSS are named by the symbols that hold them (nm of the library; a build with symbols
names more), so the start-up cost can be attributed: the granule map, the bootstrap arena,
thread structs, statistics, chunk headers. The difference to glibc is what the allocator adds.
"""
import argparse
import bisect
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = [("glibc", None), ("jemalloc", "libjemalloc.so.2"), ("tcmalloc", "libtcmalloc_minimal.so.4"),
         ("mimalloc", "libmimalloc.so.2")]


def ldpath(soname):
    out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if line.strip().startswith(soname + " ") and "x86-64" in line:
            return line.rsplit("=>", 1)[1].strip()
    return None


def parse(path):
    snaps = {}
    cur = None
    for line in open(path):
        f = line.split()
        if not f:
            continue
        if f[0] == "snapshot":
            cur = snaps.setdefault(f[1], {"maps": [], "total": {}})
        elif f[0] == "map":
            kv = dict(x.split("=", 1) for x in f[5:7])
            cur["maps"].append({"start": int(f[1], 16), "end": int(f[2], 16), "perms": f[3],
                                "off": int(f[4], 16), "rss": int(kv["rss_kb"]), "anon": int(kv["anon_kb"]),
                                "path": " ".join(f[7:]), "runs": []})
        elif f[0] == "run":
            cur["maps"][-1]["runs"].append((int(f[1]), int(f[2])))
        elif f[0] == "total":
            cur["total"] = dict((k, int(v)) for k, v in (x.split("=") for x in f[1:]))
    return snaps


def label_maps(maps):
    """Each mapping's label: 'file text/rodata/data', 'file bss', or 'anon N KiB'."""
    prev = None
    for m in maps:
        p = m["path"]
        if p.startswith("/"):
            kind = "text" if "x" in m["perms"] else ("data" if "w" in m["perms"] else "rodata")
            m["label"] = "%s %s" % (os.path.basename(p), kind)
            m["file"] = p
        elif p == "[anon]" and prev and prev.get("file") and prev["end"] == m["start"] and "w" in prev["perms"]:
            m["label"] = "%s bss" % os.path.basename(prev["file"])
            m["file"] = prev["file"]
            m["bss"] = True
        elif p == "[anon]":
            m["label"] = "anon %d KiB" % ((m["end"] - m["start"]) >> 10)
        else:
            m["label"] = p
        prev = m
    return maps


def symbols(lib):
    """(sorted starts, [(start, size, name)]) of the data and BSS objects of lib."""
    try:
        out = subprocess.run(["nm", "-S", "--defined-only", lib], capture_output=True, text=True).stdout
    except OSError:
        return [], []
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "bBdDsS":
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    syms.sort()
    return [s[0] for s in syms], syms


def attribute(maps, lib_path, nm_lib):
    """KiB of lib's writable mappings resident per symbol (pages shared by two count for both)."""
    base = min((m["start"] for m in maps if m.get("file") == lib_path and m["off"] == 0), default=None)
    if base is None:
        return {}
    starts, syms = symbols(nm_lib)
    per = {}
    for m in maps:
        if m.get("file") != lib_path or "w" not in m["perms"]:
            continue
        for off_kb, len_kb in m["runs"]:
            for page in range(m["start"] + off_kb * 1024, m["start"] + (off_kb + len_kb) * 1024, 4096):
                v = page - base
                names = set()
                i = bisect.bisect_right(starts, v + 4095) - 1
                while i >= 0 and syms[i][0] + max(syms[i][1], 1) > v:
                    if syms[i][0] <= v + 4095:
                        names.add(syms[i][2])
                    i -= 1
                    if len(names) > 8:
                        break
                key = ", ".join(sorted(names)) if names else "(no symbol: %s)" % m["label"]
                per[key] = per.get(key, 0) + 4
    return per


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--lib", default=None, help="libnumapage.so (default BUILD/src/libnumapage.so)")
    ap.add_argument("--nm-lib", default=None, help="the same library with symbols, for nm (default --lib)")
    ap.add_argument("--allocators", default="libnumapage,glibc,jemalloc,tcmalloc,mimalloc")
    ap.add_argument("--snapshot", default="main", choices=["main", "end"])
    a = ap.parse_args()
    exe = os.path.join(a.build_dir, "bench", "startup_rss")
    lib = os.path.realpath(a.lib or os.path.join(a.build_dir, "src", "libnumapage.so"))
    allocs = [("libnumapage", lib)] + [(n, ldpath(s) if s else None) for n, s in PEERS]
    want = a.allocators.split(",")
    results = {}
    for name, path in allocs:
        if name not in want or (name != "glibc" and not path):
            continue
        outf = "/tmp/startup_rss-%s-%d.txt" % (name, os.getpid())
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if path:
            env["LD_PRELOAD"] = path
        subprocess.run([exe, outf], env=env, check=True, stderr=subprocess.DEVNULL)
        results[name] = parse(outf)
        os.unlink(outf)
    print("# startup_rss: resident KiB at %s (main = main's first line)\n" % a.snapshot)
    print("| allocator | at main | at end | VmHWM |")
    print("|---|---:|---:|---:|")
    for name, s in results.items():
        print("| %s | %d | %d | %d |" % (name, s["main"]["total"].get("rss_kb", 0), s["end"]["total"].get("rss_kb", 0),
                                        s["end"]["total"].get("VmHWM_kb", 0)))
    for name, s in results.items():
        maps = label_maps(s[a.snapshot]["maps"])
        per = {}
        for m in maps:
            per[m["label"]] = per.get(m["label"], 0) + m["rss"]
        print("\n## %s: %d KiB resident\n" % (name, sum(per.values())))
        print("| mapping | KiB |")
        print("|---|---:|")
        for k, v in sorted(per.items(), key=lambda kv: -kv[1]):
            if v:
                print("| %s | %d |" % (k, v))
        if name == "libnumapage":
            syms = attribute(maps, lib, os.path.realpath(a.nm_lib) if a.nm_lib else lib)
            print("\nlibnumapage's data and BSS, resident pages by the symbols they hold (KiB):\n")
            print("| symbols | KiB |")
            print("|---|---:|")
            for k, v in sorted(syms.items(), key=lambda kv: -kv[1]):
                print("| %s | %d |" % (k[:200], v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
