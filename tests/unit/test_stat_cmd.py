#!/usr/bin/env python3
"""`numapage stat PID` against live processes (meson suite 'api').

usage: test_stat_cmd.py NUMAPAGE_EXE STAT_TARGET_EXE

stat_target (tests/unit/stat_target.c) publishes its counters and counts known events:
node 0: numa_hit 1000, local_node 1000, numa_foreign 3, malloc_requested 123456;
node 3: numa_hit 7, numa_miss 3, pages_in_use 5. Checks the table, refreshing, the error
cases (no process, no libnumapage, another user, bad arguments), stale-file cleaning and
removal of the file at exit.
"""
import os
import shutil
import struct
import subprocess
import sys

EXE, TARGET = sys.argv[1], sys.argv[2]
UID = os.geteuid()
SHM = '/dev/shm'


def shm_path(pid, uid=UID):
    return '%s/numapage.%d.%d' % (SHM, uid, pid)


def start(**env):
    e = dict(os.environ)
    e.update(env)
    p = subprocess.Popen([TARGET], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=e)
    words = p.stdout.readline().split()
    assert words and words[0] == 'ready', words
    assert int(words[1]) == p.pid
    return p


def stop(p):
    p.stdin.write('exit\n')
    p.stdin.flush()
    assert p.wait(timeout=10) == 0


def stat(*args, rc=0, prefix=()):
    r = subprocess.run([*prefix, EXE, 'stat', *map(str, args)], capture_output=True, text=True, timeout=30)
    if r.returncode != rc:
        sys.exit('stat %s: exit %d, wanted %d\nstdout:\n%s\nstderr:\n%s' % (args, r.returncode, rc, r.stdout, r.stderr))
    return r


def tables(out):
    """Each table as (header columns, {counter: [values...]})."""
    result = []
    for block in out.strip().split('\n\n'):
        lines = block.split('\n')
        assert lines[0].startswith('Per-node statistics of process'), lines[0]
        cols = lines[1].split()
        rows = {}
        for line in lines[2:]:
            w = line.split()
            assert len(w) == len(cols) + 1, line
            rows[w[0]] = [int(x) for x in w[1:]]
        result.append((cols, rows))
    return result


def expect(rows, name, values):
    assert rows[name] == values, (name, rows[name], values)


# ---- a live target: the table ------------------------------------------------------------------
t = start(NUMAPAGE_SHM='1')
path = shm_path(t.pid)
st = os.stat(path)
assert st.st_mode & 0o777 == 0o600 and st.st_uid == UID, oct(st.st_mode)
r = stat(t.pid)
(cols, rows), = tables(r.stdout)
assert cols == ['node0', 'node3', 'Total'], cols
assert 'stat_target' in r.stdout.split('\n')[0], r.stdout
expect(rows, 'numa_hit', [1000, 7, 1007])
expect(rows, 'local_node', [1000, 0, 1000])
expect(rows, 'numa_miss', [0, 3, 3])
expect(rows, 'numa_foreign', [3, 0, 3])
expect(rows, 'pages_in_use', [0, 5, 5])
expect(rows, 'malloc_requested', [123456, 0, 123456])
for name, v in rows.items():
    if name not in ('numa_hit', 'local_node', 'numa_miss', 'numa_foreign', 'pages_in_use', 'malloc_requested'):
        assert v == [0, 0, 0], (name, v)
assert len(rows) >= 21, len(rows)

# ---- refreshing: -i / -n, and new counts show up ----------------------------------------------------
s = subprocess.Popen([EXE, 'stat', str(t.pid), '-i', '0.5', '-n', '4'], stdout=subprocess.PIPE, text=True)
first = []
while True:
    line = s.stdout.readline()
    assert line, 'stat ended early'
    first.append(line)
    if line.startswith('numa_hit'):
        break
t.stdin.write('count 50\n')
t.stdin.flush()
assert t.stdout.readline().strip() == 'ok'
out = ''.join(first) + s.stdout.read()
assert s.wait(timeout=10) == 0
tabs = tables(out)
assert len(tabs) == 4, out
expect(tabs[0][1], 'numa_hit', [1000, 7, 1007])
expect(tabs[3][1], 'numa_hit', [1050, 7, 1057])

# ---- another user -----------------------------------------------------------------------------------
if UID == 0 and shutil.which('setpriv'):
    nobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']
    probe = subprocess.run([*nobody, EXE, '--version'], capture_output=True)
    if probe.returncode == 0:
        r = stat(t.pid, rc=1, prefix=nobody)
        assert 'belongs to another user' in r.stderr, r.stderr
        assert os.path.exists(path)  # never removed by someone else's stat
    else:
        print('SKIP another-user check: uid 65534 cannot run', EXE)
else:
    print('SKIP another-user check: needs root and setpriv')

# ---- exit removes the file ----------------------------------------------------------------------------
stop(t)
assert not os.path.exists(path), path
r = stat(t.pid, rc=1)
assert 'no process %d' % t.pid in r.stderr, r.stderr

# ---- processes without a file ---------------------------------------------------------------------------
sleeper = subprocess.Popen(['sleep', '30'])
try:
    r = stat(sleeper.pid, rc=1)
    assert 'does not use libnumapage' in r.stderr, r.stderr
    # A complete file of an earlier process whose pid the sleeper now has: stale, removed.
    hdr = struct.pack('<QIIiIiiIIII64i64i', 0x31544154534e504e, 1, 4096, sleeper.pid, UID, 1, 1, 4096,
                      560, 640, 64, *([0] * 128))
    fake = shm_path(sleeper.pid)
    with open(fake, 'wb') as f:
        f.write(hdr.ljust(4096, b'\0'))
    os.chmod(fake, 0o600)
    r = stat(sleeper.pid, rc=1)
    assert 'does not use libnumapage' in r.stderr, r.stderr
    assert not os.path.exists(fake), fake
finally:
    sleeper.kill()
    sleeper.wait()

t = start(NUMAPAGE_SHM='0')
r = stat(t.pid, rc=1)
assert 'does not use libnumapage' in r.stderr and 'NUMAPAGE_SHM=0' in r.stderr, r.stderr
stop(t)

# ---- a killed process leaves its file; the next stat removes it ------------------------------------------
t = start()
path = shm_path(t.pid)
assert os.path.exists(path)
t.kill()
t.wait()
assert os.path.exists(path)
r = stat(t.pid, rc=1)
assert 'no process' in r.stderr and 'removed ' + path in r.stderr, r.stderr
assert not os.path.exists(path)

# ---- a process that exits while watched ---------------------------------------------------------------
t = start()
s = subprocess.Popen([EXE, 'stat', str(t.pid), '-i', '0.2'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
seen = []
while sum(line.startswith('Per-node') for line in seen) < 2:
    line = s.stdout.readline()
    assert line, 'stat ended early'
    seen.append(line)
stop(t)
# Read through the same buffered pipe objects (communicate() would skip what readline buffered).
out = ''.join(seen) + s.stdout.read()
err = s.stderr.read()
s.wait(timeout=10)
assert s.returncode == 0 and 'has exited' in err and len(tables(out)) >= 2, (out, err)

# ---- arguments ------------------------------------------------------------------------------------------
stat(rc=2)
stat('abc', rc=2)
stat(1, '-i', '0', rc=2)
stat(1, '-n', '0', rc=2)
stat(1, 2, rc=2)
print('ok')
