#!/usr/bin/env python3
"""
tests/programs/early_malloc.py — mallocs made before libnumapage's constructor runs (the
constructors of a program's own libraries run first when libnumapage is preloaded) are served
by the allocator proper, initialised by the first of them (issue 13: they went to a capped
start-up arena: 40 x 1 MiB left 44 MB resident, 300,000 x 256 B returned NULL, a 64 MiB realloc
crashed inside hwloc). Runs early_main (its library's constructor does the work) under
LD_PRELOAD for each case and checks the constructor's report.
"""

import argparse
import os
import re
import subprocess
import sys

RSS_GROWTH_LIMIT_KIB = 16 * 1024  # 40 MiB went through; a few MiB may stay cached


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--lib', required=True)
    ap.add_argument('--exe', required=True)
    a = ap.parse_args()
    failed = 0
    for case in ('big', 'small', 'mixed'):
        env = dict(os.environ, LD_PRELOAD=os.path.abspath(a.lib), EARLY_CASE=case)
        r = subprocess.run([a.exe], env=env, capture_output=True, text=True, timeout=120)
        out = r.stdout.splitlines()
        report = out[0] if out else ''
        ok = r.returncode == 0 and len(out) == 2 and out[1] == "main: malloc is libnumapage's"
        if case == 'big':
            m = re.match(r'big: rss grew (-?\d+) KiB$', report)
            ok = ok and m is not None and int(m.group(1)) < RSS_GROWTH_LIMIT_KIB
        else:
            ok = ok and report == case + ': ok'
        print('%s - %s: %s' % ('ok' if ok else 'not ok', case, ' | '.join(out) or r.stderr.strip()))
        if not ok:
            print('#   rc %d, stderr %r' % (r.returncode, r.stderr))
            failed += 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
