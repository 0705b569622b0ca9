#!/usr/bin/env python3
"""
tests/programs/setuid_env.py — a setuid-root program linked with libnumapage, run by an ordinary
user with a hostile environment, must not be steered by it (issue 13: it loaded every hwloc_*.so
of the user's HWLOC_PLUGINS_PATH as root and took the topology from HWLOC_XMLFILE).

As root: copies the probe (statically linked with libnumapage) into a fresh directory, makes it
setuid root, and runs it as nobody with HWLOC_PLUGINS_PATH pointing at a plugin that leaves a
mark when loaded, HWLOC_XMLFILE / HWLOC_SYNTHETIC / HWLOC_FSROOT / NUMAPAGE_TOPOLOGY naming other
machines, NUMAPAGE_STATS asking for a report file and NUMAPAGE_VERBOSE for messages. Passes when
the plugin was never loaded, the topology is this machine's, no report file was written and
nothing was printed. A control run of the same copy without the setuid bit (root, same
environment) must load the plugin and the rehearsed topology, so the test can see the hole.
Exit 77 (skipped) when not run as root or when the file system ignores the setuid bit.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
NOBODY = 65534


def run(cmd, env, as_nobody):
    kw = dict(user=NOBODY, group=NOBODY, extra_groups=[]) if as_nobody else {}
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--probe', required=True)
    ap.add_argument('--plugin', required=True)
    ap.add_argument('--fixtures', required=True)
    a = ap.parse_args()
    if os.geteuid() != 0:
        print('skipped: the setuid test needs root')
        return SKIP
    top = tempfile.mkdtemp(prefix='numapage-setuid.')
    try:
        os.chmod(top, 0o755)
        probe = os.path.join(top, 'probe')
        shutil.copy(a.probe, probe)
        plugins = os.path.join(top, 'plugins')
        os.mkdir(plugins, 0o755)
        shutil.copy(a.plugin, os.path.join(plugins, 'hwloc_evil.so'))
        mark = os.path.join(top, 'mark')
        stats = os.path.join(top, 'stats.json')

        base = run([probe], {'PATH': '/usr/bin:/bin'}, False)
        if base.returncode != 0 or not base.stdout.startswith('euid=0 '):
            print('not ok - baseline run: rc %d\n%s%s' % (base.returncode, base.stdout, base.stderr))
            return 1
        nodes = base.stdout.split()[1]

        hostile = {
            'PATH': '/usr/bin:/bin',
            'HWLOC_PLUGINS_PATH': plugins,
            'HWLOC_XMLFILE': os.path.join(a.fixtures, '4node.xml'),
            'HWLOC_SYNTHETIC': 'pack:3 [numa(memory=1073741824)] pu:1',
            'HWLOC_FSROOT': os.path.join(a.fixtures, 'linux-3node'),
            'HWLOC_THISSYSTEM': '1',
            'HWLOC_ALLOW': 'all',
            'NUMAPAGE_TOPOLOGY': os.path.join(a.fixtures, 'r7425.xml'),
            'NUMAPAGE_STATS': 'json:' + stats,
            'NUMAPAGE_VERBOSE': '1',
            'NUMAPAGE_BIND': 'strict',
            'HWLOC_EVIL_MARK': mark,
        }
        os.chown(probe, 0, 0)
        os.chmod(probe, 0o4755)
        r = run([probe], hostile, True)
        if r.returncode == 0 and r.stdout.startswith('euid=%d ' % NOBODY):
            print('skipped: the file system under %s ignores the setuid bit' % top)
            return SKIP
        failures = []
        if r.returncode != 0:
            failures.append('setuid run exited %d: %s' % (r.returncode, r.stderr.strip()))
        if r.stdout.strip() != 'euid=0 ' + nodes:
            failures.append('setuid run saw %r, this machine is %r' % (r.stdout.strip(), 'euid=0 ' + nodes))
        if os.path.exists(mark):
            failures.append('the plugin from HWLOC_PLUGINS_PATH was loaded: ' + open(mark).read().strip())
        if os.path.exists(stats):
            failures.append('NUMAPAGE_STATS wrote ' + stats)
        if r.stderr:
            failures.append('printed: %r' % r.stderr)

        # Control: the same program, not setuid, same environment: the user's own choices.
        os.chmod(probe, 0o755)
        c = run([probe], hostile, False)
        if not os.path.exists(mark):
            failures.append('control: the plugin was not loaded without setuid either; the test cannot see the hole')
        if c.stdout.strip() != 'euid=0 nodes=8':
            failures.append('control: NUMAPAGE_TOPOLOGY was not honoured without setuid: %r' % c.stdout)
        for f in failures:
            print('not ok - ' + f)
        if not failures:
            print('ok - setuid: no plugin, this machine (%s), no report file, silent; control: plugin and rehearsal honoured' % nodes)
        return 1 if failures else 0
    finally:
        shutil.rmtree(top, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
