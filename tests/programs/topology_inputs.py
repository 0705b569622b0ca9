#!/usr/bin/env python3
"""
tests/programs/topology_inputs.py — topologies a user names must never take the program down
(issue 13): /dev/zero was read forever, a malformed XML file crashed hwloc inside the process, a
synthetic topology of 70,000 PUs crashed after minutes. For each input, the probe (linked with
libnumapage) runs with NUMAPAGE_TOPOLOGY (or HWLOC_XMLFILE) set to it, and must exit 0 on one
node with exactly one warning that says what was wrong. A sound fixture loads silently.
Then the same under no_child, where no child process can be made (seccomp answers clone with
EAGAIN, as a used-up RLIMIT_NPROC does): the XML that crashes hwloc crashed the program, and a
synthetic string of 10^18 PUs hung it, since the load then ran inside the program. A named
topology is refused there, sound or not, with one warning; this machine's own loads silently.
The per-run timeout only catches a hang; nothing here measures time.
"""

import argparse
import os
import subprocess
import sys
import tempfile


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--probe', required=True)
    ap.add_argument('--fixtures', required=True)
    ap.add_argument('--no-child', required=True, help='the no_child wrapper')
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix='numapage-topo.')
    fifo = os.path.join(tmp, 'fifo')
    os.mkfifo(fifo)
    big = os.path.join(tmp, 'big.xml')
    with open(big, 'wb') as f:
        f.truncate(17 << 20)
    fx = lambda name: os.path.join(a.fixtures, name)
    cases = [
        ('NUMAPAGE_TOPOLOGY', '/dev/zero', 'is not a regular file'),
        ('NUMAPAGE_TOPOLOGY', fifo, 'is not a regular file'),
        ('NUMAPAGE_TOPOLOGY', a.fixtures, 'is not a regular file'),
        ('NUMAPAGE_TOPOLOGY', big, 'larger than 16 MiB'),
        ('NUMAPAGE_TOPOLOGY', '/nonexistent/topology.xml', 'cannot read hwloc XML'),
        ('NUMAPAGE_TOPOLOGY', fx('broken.xml'), 'cannot parse hwloc XML'),
        ('NUMAPAGE_TOPOLOGY', fx('crash-hwloc.xml'), 'hwloc crashed loading'),
        ('HWLOC_XMLFILE', fx('crash-hwloc.xml'), 'hwloc crashed loading'),
        # hwloc either runs out of its time or of its memory (and crashes on a NULL).
        ('NUMAPAGE_TOPOLOGY', 'synthetic:pack:70 core:1000 pu:1', ('did not finish loading', 'hwloc crashed')),
        ('NUMAPAGE_TOPOLOGY', 'synthetic:' + 'x' * 2000, 'longer than'),
    ]
    refused = 'no child process'
    contained = [
        ('NUMAPAGE_TOPOLOGY', fx('crash-hwloc.xml'), refused),
        ('HWLOC_XMLFILE', fx('crash-hwloc.xml'), refused),
        ('NUMAPAGE_TOPOLOGY', 'synthetic:numa:1000000000 pu:1000000000', refused),
        ('NUMAPAGE_TOPOLOGY', 'synthetic:numa:2 pu:2', refused),
        ('NUMAPAGE_TOPOLOGY', fx('4node.xml'), refused),
    ]
    r = subprocess.run([a.no_child, '/bin/true'], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        print('# no_child cannot run here (%d: %s): its cases are left out' % (r.returncode, r.stderr.strip()))
        contained = []
    failed = 0
    for wrap, (var, value, want) in [([], c) for c in cases] + [([a.no_child], c) for c in contained]:
        env = dict(os.environ, **{var: value})
        env.pop('NUMAPAGE_TOPOLOGY' if var != 'NUMAPAGE_TOPOLOGY' else 'HWLOC_XMLFILE', None)
        r = subprocess.run(wrap + [a.probe], env=env, capture_output=True, text=True, timeout=120)
        lines = r.stderr.splitlines()
        wants = want if isinstance(want, tuple) else (want,)
        ok = (r.returncode == 0 and r.stdout.strip().endswith('nodes=1') and len(lines) == 1 and
              lines[0].startswith('numapage: warning: topology: ') and any(w in lines[0] for w in wants))
        label = '%s%s=%s' % ('no child, ' if wrap else '', var, value if len(value) < 60 else value[:57] + '...')
        print('%s - %s: %s' % ('ok' if ok else 'not ok', label, lines[0] if lines else '(no warning)'))
        if not ok:
            print('#   rc %d, stdout %r, stderr %r' % (r.returncode, r.stdout, r.stderr))
            failed += 1
    env = dict(os.environ, NUMAPAGE_TOPOLOGY=fx('4node.xml'))
    env.pop('HWLOC_XMLFILE', None)
    r = subprocess.run([a.probe], env=env, capture_output=True, text=True, timeout=120)
    good = r.returncode == 0 and r.stdout.strip().endswith('nodes=4') and not r.stderr
    print('%s - a sound fixture loads silently: %r' % ('ok' if good else 'not ok', r.stdout.strip()))
    failed += not good
    if contained:
        env = dict(os.environ)
        env.pop('NUMAPAGE_TOPOLOGY', None)
        env.pop('HWLOC_XMLFILE', None)
        r = subprocess.run([a.no_child, a.probe], env=env, capture_output=True, text=True, timeout=120)
        good = r.returncode == 0 and 'nodes=' in r.stdout and not r.stderr
        print('%s - no child, this machine loads silently: %r %r' % ('ok' if good else 'not ok', r.stdout.strip(), r.stderr))
        failed += not good
    os.unlink(fifo)
    os.unlink(big)
    os.rmdir(tmp)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
