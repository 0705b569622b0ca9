#!/usr/bin/env python3
"""
tests/cli/test_topology_cmd.py — `numapage topology` through its binary: the issue's "done when"
on the r7425 fixture (8 nodes, 6 memoryless, the fallback orders), well-formed JSON for every
fixture and for this machine, a synthetic string, and broken inputs giving one warning, one
node and exit status 1; a bad option exits 2. Arguments: the numapage binary, the fixtures.
"""
import json, os, subprocess, sys
exe, fixtures = sys.argv[1], sys.argv[2]
def run(*args, env=None, rc=0):
    p = subprocess.run([exe, 'topology', *args], capture_output=True, text=True, env=env)
    if p.returncode != rc:
        sys.exit('%s: exit %d, wanted %d\n%s%s' % (args, p.returncode, rc, p.stdout, p.stderr))
    return p
out = run(env={'NUMAPAGE_TOPOLOGY': fixtures + '/r7425.xml'}).stdout
for want in ('nodes: 8, 6 memoryless', 'node 0 -> 1 (16), 5 (32)\n', 'node 4 -> 5 (16), 1 (32)\n'):
    assert want in out, (want, out)
for f in ('2990wx', '2node', '4node', 'cxl', 'r7425', 'sparse', 'single'):
    j = json.loads(run('--json', '--topology', fixtures + '/' + f + '.xml').stdout)
    assert j['source'] == 'xml' and j['is_system'] is False and len(j['nodes']) == j['nnodes'], f
j = json.loads(run('--json', '--topology=synthetic:pack:2 [numa(memory=1073741824)] pu:2').stdout)
assert j['source'] == 'synthetic' and j['nnodes'] == 2, j
j = json.loads(run('--json', env={}).stdout)
assert j['source'] == 'system' and j['is_system'] is True and j['nnodes'] >= 1, j
# This process's memory policy is shown on any machine, one node included (where the library
# itself never loads libnuma, which reads it: the command loads it).
import shutil
numactl = shutil.which('numactl')
if numactl:
    p = subprocess.run([numactl, '--preferred=0', exe, 'topology'], capture_output=True, text=True)
    assert p.returncode == 0, p
    line = [l for l in p.stdout.splitlines() if l.startswith('memory policy:')]
    assert line and 'MPOL_PREFERRED' in line[0], (line, p.stdout)
else:
    print('SKIP memory policy check: no numactl')
# hwloc 2.9 leaks a few hundred bytes on an XML cut inside a tag: not ours, keep LSan quiet.
quiet = dict(os.environ, ASAN_OPTIONS='detect_leaks=0')
for bad in (fixtures + '/broken.xml', fixtures + '/missing.xml', 'synthetic:nonsense'):
    p = run('--topology', bad, env=quiet, rc=1)
    assert p.stderr.count('numapage: warning: ') == 1 and 'nodes: 1,' in p.stdout, (bad, p.stdout, p.stderr)
    json.loads(run('--json', '--topology', bad, env=quiet, rc=1).stdout)
run('--bogus', rc=2)
