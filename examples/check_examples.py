#!/usr/bin/env python3
"""Runs one example the way its README says and checks what it printed (examples/meson.build).

check_examples.py EXAMPLE ARGS...   (see each check_* function for its arguments)

Expected values come from the program's own words (bytes it asked for) and from
`numapage topology --json` (nodes, memory, fallback orders), never from constants here.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

GAUGES = {'pages_in_use', 'malloc_in_use', 'threads'}


def fail(msg, out=''):
    sys.exit('FAILED: %s\n%s' % (msg, out))


def run(cmd, env=None, rc=0, timeout=120, cwd=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=cwd)
    if rc is not None and p.returncode != rc:
        fail('%s exited %d, wanted %d' % (' '.join(cmd), p.returncode, rc), p.stdout + p.stderr)
    return p


def topology(numapage, topo=None):
    """{os_id: node} from numapage topology --json, plus each node's nearest memory nodes."""
    args = [numapage, 'topology', '--json'] + (['--topology', topo] if topo else [])
    env = dict(os.environ)
    env.pop('NUMAPAGE_TOPOLOGY', None)
    nodes = {n['os_id']: n for n in json.loads(run(args, env=env).stdout)['nodes']}
    for n in nodes.values():
        # Where a thread of this node gets memory: any node of the nearest tier of its fallback
        # order (equidistant pools share the load).
        d0 = n['fallback_dist'][0]
        n['nearest'] = {f for f, d in zip(n['fallback'], n['fallback_dist']) if d == d0}
        n['has_memory'] = n['mem_bytes'] > 0 and n['mem_allowed']
    return nodes


def tables(text):
    """The numastat-like tables in text: a list of {row: [values..., total]} with 'nodes'."""
    out = []
    for block in re.split(r'\n(?=\s+node\d+\s)', '\n' + text)[1:]:
        lines = block.split('\n')
        t = {'nodes': [int(x) for x in re.findall(r'node(\d+)', lines[0])]}
        for line in lines[1:]:
            # `numapage run --raw` has a unit column after the name; NUMAPAGE_STATS=1 has none.
            m = re.match(r'^([a-z_]+)(?:\s+(?:pages|bytes|count))?((?:\s+\d+)+)\s*$', line)
            if not m:
                break
            t[m.group(1)] = [int(v) for v in m.group(2).split()]
        out.append(t)
    return out


def check_preload(run_sh, numapage, lib, churn):
    env = dict(os.environ, NUMAPAGE=numapage, NUMAPAGE_LIB=lib)
    for k in ('LD_PRELOAD', 'NUMAPAGE_STATS'):
        env.pop(k, None)
    # Without libnumapage: no table (the tables below are libnumapage's doing).
    plain = run([churn], env=env)
    if 'numapage' in plain.stderr:
        fail('churn printed statistics without libnumapage', plain.stderr)
    asked = int(re.search(r'asked malloc for (\d+) bytes', plain.stdout).group(1))
    p = run([run_sh, churn], env=env)
    if p.stdout.count('asked malloc for %d bytes' % asked) != 2:
        fail('churn did not run twice', p.stdout)
    heads = re.findall(r'^numapage: per-node statistics of (the job, 1 process|process \d+) ',
                       p.stderr, re.M)
    ts = tables(p.stderr)
    if len(heads) != 2 or len(ts) != 2 or not heads[0].startswith('the job'):
        fail('wanted the job table of numapage run, then the process table of LD_PRELOAD', p.stderr)
    for how, t in zip(('numapage run --stats', 'LD_PRELOAD'), ts):
        for row in ('numa_hit', 'numa_miss', 'numa_foreign', 'local_node', 'other_node',
                    'pages_in_use', 'malloc_requested', 'malloc_in_use', 'threads'):
            if row not in t or len(t[row]) != len(t['nodes']) + 1 or sum(t[row][:-1]) != t[row][-1]:
                fail('%s: row %s missing or its Total is not the sum' % (how, row), p.stderr)
        if t['malloc_requested'][-1] < asked:
            fail('%s: malloc_requested %d < the %d bytes churn asked for' % (
                how, t['malloc_requested'][-1], asked), p.stderr)
        if t['numa_hit'][-1] + t['numa_miss'][-1] == 0:
            fail('%s: no page counted' % how, p.stderr)
        print('%s: malloc_requested %d >= %d asked; numa_hit %d' % (
            how, t['malloc_requested'][-1], asked, t['numa_hit'][-1]))


def check_link(exe, numapage, fixtures):
    for topo in (None, os.path.join(fixtures, '2990wx.xml')):
        env = dict(os.environ)
        env.pop('NUMAPAGE_TOPOLOGY', None)
        if topo:
            env['NUMAPAGE_TOPOLOGY'] = topo
        out = run([exe], env=env).stdout
        m = re.search(r'^(\d+) threads asked malloc for (\d+) bytes; libnumapage counted (\d+)$', out, re.M)
        if not m or int(m.group(3)) < int(m.group(2)):
            fail('bytes asked and counted', out)
        rows = {int(n): [int(v) for v in rest.split()]
                for n, rest in re.findall(r'^node(\d+)\s+(\d+\s+\d+\s+\d+\s+\d+)$', out, re.M)}
        nodes = topology(numapage, topo)
        if set(rows) != set(nodes):
            fail('node rows %s, topology has %s' % (sorted(rows), sorted(nodes)), out)
        objects = sum(r[0] for r in rows.values())
        if objects != int(m.group(1)) * 5000:
            fail('%d objects found on nodes, wanted %d' % (objects, int(m.group(1)) * 5000), out)
        if any(r[0] and not nodes[n]['has_memory'] for n, r in rows.items()):
            fail('objects on a node without memory', out)
        print('%s: %s' % (topo or 'this machine', m.group(0)))


def check_onnode(exe, numapage, fixtures):
    for topo in (None, 'r7425.xml', '2990wx.xml', 'sparse.xml'):
        env = dict(os.environ)
        env.pop('NUMAPAGE_TOPOLOGY', None)
        path = os.path.join(fixtures, topo) if topo else None
        if path:
            env['NUMAPAGE_TOPOLOGY'] = path
        out = run([exe], env=env).stdout
        nodes = topology(numapage, path)
        got = {int(a): int(b) for a, b in re.findall(r'asked for node (\d+), got node (\d+)', out)}
        if set(got) != set(nodes):
            fail('workers for nodes %s, topology has %s' % (sorted(got), sorted(nodes)), out)
        for a, b in got.items():
            want = {a} if nodes[a]['has_memory'] else nodes[a]['nearest']
            if b not in want:
                fail('node %d: buffer on node %d, wanted one of %s' % (a, b, sorted(want)), out)
        if len(re.findall(r'^main: freed worker', out, re.M)) != len(nodes):
            fail('not every buffer was freed by main', out)
        print('%s: %s' % (topo or 'this machine', ', '.join('%d->%d' % kv for kv in sorted(got.items()))))


def check_stats(exe, numapage):
    p = run([exe])
    mine, lib = json.loads(p.stdout), json.loads(p.stderr)
    nodes = topology(numapage)
    if [n['node'] for n in mine['nodes']] != sorted(nodes) or \
            [n['node'] for n in lib['nodes']] != sorted(nodes):
        fail('nodes differ from the topology %s' % sorted(nodes), p.stdout + p.stderr)
    for a, b in zip(mine['nodes'], lib['nodes']):
        if list(a) != list(b):
            fail('counters differ: %s vs the library\'s %s' % (list(a), list(b)))
        for k in a:
            if k not in GAUGES and b[k] < a[k]:
                fail('event %s went down from %d to %d' % (k, a[k], b[k]))
    busy = mine['busy_bytes']
    in_use = sum(n['malloc_in_use'] for n in mine['nodes'])
    pages = sum(n['pages_in_use'] for n in mine['nodes'])
    if in_use < busy or pages * os.sysconf('SC_PAGE_SIZE') < busy:
        fail('malloc_in_use %d, pages_in_use %d: less than the %d bytes kept busy' % (in_use, pages, busy))
    print('%d counters on %d node(s); malloc_in_use %d >= %d busy; pages_in_use %d' % (
        len(mine['nodes'][0]) - 1, len(nodes), in_use, busy, pages))


def check_rehearse(script, numapage, exe, fixtures):
    env = dict(os.environ, NUMAPAGE=numapage, REHEARSE=exe)
    env.pop('NUMAPAGE_TOPOLOGY', None)
    for topo in ('r7425.xml', '2990wx.xml'):
        path = os.path.join(fixtures, topo)
        out = run([script, path], env=env).stdout
        nodes = topology(numapage, path)
        sections = re.split(r'^== \d\. ', out, flags=re.M)
        if len(sections) != 4:
            fail('%s: wanted 3 sections' % topo, out)
        for n in nodes.values():
            order = ', '.join('%d (%d)' % fd for fd in zip(n['fallback'], n['fallback_dist']))
            if '  node %d -> %s\n' % (n['os_id'], order) not in sections[1]:
                fail('%s: fallback order of node %d not shown' % (topo, n['os_id']), sections[1])
        for sec, how in ((sections[2], 'spread'), (sections[3], 'set-home')):
            main = int(re.search(r'^main thread: home node (\d+)', sec, re.M).group(1))
            th = [(int(h), [int(x) for x in m.split()]) for h, m in
                  re.findall(r'^thread \d+: home node (\d+), memory from node((?: \d+)+)$', sec, re.M)]
            if len(th) != len(nodes):
                fail('%s %s: %d threads reported, wanted %d' % (topo, how, len(th), len(nodes)), sec)
            for h, ms in th:
                if not set(ms) <= nodes[h]['nearest']:
                    fail('%s %s: a thread of node %d got memory from nodes %s, wanted %s' % (
                        topo, how, h, ms, sorted(nodes[h]['nearest'])), sec)
            homes = [h for h, _ in th]
            if how == 'set-home' and homes != sorted(nodes):
                fail('%s: homes %s, wanted one per node in order' % (topo, homes), sec)
            if how == 'spread':
                count = {n: homes.count(n) + (n == main) for n in nodes}
                if max(count.values()) - min(count.values()) > 1:
                    fail('%s: spread gave threads per node %s' % (topo, count), sec)
            t = tables(sec)
            if len(t) != 1 or t[0]['nodes'] != sorted(nodes):
                fail('%s %s: no per-node table' % (topo, how), sec)
            t = t[0]
            for i, n in enumerate(t['nodes']):
                # A node without memory that had a thread: its pages were intended here and
                # served elsewhere (numa_foreign), by nodes that count them as numa_miss.
                if n in homes and not nodes[n]['has_memory'] and t['numa_foreign'][i] == 0:
                    fail('%s %s: node %d has no memory and threads, but numa_foreign is 0' % (
                        topo, how, n), sec)
                if t['bind_skipped'][i] != 0 and nodes[n]['has_memory'] is False:
                    fail('%s: a node without memory mapped chunks' % topo, sec)
                # numapage(7): hit + miss and local + other both count the pages a node served.
                if t['numa_hit'][i] + t['numa_miss'][i] != t['local_node'][i] + t['other_node'][i]:
                    fail('%s %s: node %d: numa_hit + numa_miss != local_node + other_node' % (
                        topo, how, n), sec)
            if t['numa_miss'][-1] != t['numa_foreign'][-1]:
                fail('%s %s: total numa_miss != total numa_foreign' % (topo, how), sec)
            if t['bind_skipped'][-1] == 0 or t['bind_fail'][-1] != 0:
                fail('%s %s: a rehearsal must skip binds, not fail them' % (topo, how), sec)
            print('%s %s: main on %d, threads (home, memory) %s' % (topo, how, main, th))


def check_subproject(example, source):
    tmp = tempfile.mkdtemp(prefix='numapage-subproject.')
    try:
        proj = os.path.join(tmp, 'proj')
        shutil.copytree(example, proj)
        os.mkdir(os.path.join(proj, 'subprojects'))
        os.symlink(os.path.abspath(source), os.path.join(proj, 'subprojects', 'numapage'))
        build = os.path.join(tmp, 'build')
        env = dict(os.environ)
        for k in ('CFLAGS', 'LDFLAGS', 'MESON_TESTTHREADS'):
            env.pop(k, None)
        # Force the fallback: an installed numapage.pc must not be picked instead.
        p = run(['meson', 'setup', '--force-fallback-for=numapage', build, proj], env=env, timeout=240)
        if 'Executing subproject numapage' not in p.stdout or \
                not re.search(r'^Dependency numapage found: YES .*\(overridden\)$', p.stdout, re.M):
            fail('meson did not use the subproject', p.stdout)
        run(['ninja', '-C', build, 'where'], env=env, timeout=240)
        out = run([os.path.join(build, 'where')], env=env).stdout
        if not re.search(r'^malloc\(100\) is on node \d+, numa_page_alloc\(1 MiB\) on node \d+$', out, re.M):
            fail('where', out)
        print(out.strip())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    globals()['check_' + sys.argv[1]](*sys.argv[2:])
    print('ok')
