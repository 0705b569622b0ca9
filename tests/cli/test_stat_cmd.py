#!/usr/bin/env python3
"""`numapage stat PID` against live processes (meson suite 'api').

usage: test_stat_cmd.py NUMAPAGE_EXE STAT_TARGET_EXE

stat_target (tests/cli/stat_target.c) publishes its counters and counts known events:
node 0: numa_hit 1000, local_node 1000, numa_foreign 3, malloc_requested 123456;
node 3: numa_hit 7, numa_miss 3, pages_in_use 5. Checks the table (raw, MiB, -z, -c,
folding, --json), patterns, several processes and -P, following a wrapper, -i deltas, the
error cases (no process, no libnumapage, another user, bad arguments: each message says what
was wrong), quiet stale-file cleaning (by stat and by the library at start-up, never a
zombie's), removal of the file at exit, files of another pid namespace, a pattern that matches
an unreadable file among readable ones, and control characters in command names.
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time

EXE, TARGET = sys.argv[1], sys.argv[2]
UID = os.geteuid()
PIDNS = os.stat('/proc/self/ns/pid').st_ino  # the header's pid_ns: the namespace its pid is in
SHM = '/dev/shm'
TAG = 'stat-test-%d' % os.getpid()


def shm_path(pid, uid=UID, ns=PIDNS):
    """The live file of process pid of user uid in pid namespace ns (src/vmstat/vmstat.h)."""
    return '%s/numapage.%d.%d.%d' % (SHM, uid, pid, ns)


def start(**env):
    e = dict(os.environ)
    e.update(env)
    # The tag (stat_target ignores its arguments) makes the command line ours alone: other
    # test runs on this machine may have stat_targets of their own.
    p = subprocess.Popen([TARGET, TAG], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=e)
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
    """Each table as (heading, header columns, {counter: [values...]}), from -r output."""
    result = []
    for block in out.strip().split('\n\n'):
        lines = [l for l in block.split('\n') if not l.startswith('(')]  # the note under a heading
        head = lines.pop(0)
        if lines and lines[0] == 'no change':
            result.append((head, [], {}))
            continue
        cols = lines[0].split()
        rows = {}
        for line in lines[1:]:
            w = line.split()
            assert len(w) == len(cols) + 2, line
            rows[w[0]] = [int(x) for x in w[2:]]
        result.append((head, cols, rows))
    return result


def expect(rows, name, values):
    assert rows[name] == values, (name, rows[name], values)


# ---- a live target: the table ------------------------------------------------------------------
t = start(NUMAPAGE_SHM='1')
path = shm_path(t.pid)
st = os.stat(path)
assert st.st_mode & 0o777 == 0o600 and st.st_uid == UID, oct(st.st_mode)
# Whatever the umask took away (0377: the owner's write bit), the file is 0600: the library
# sets the mode where it is not (one system call less a start where it is).
old_mask = os.umask(0o377)
try:
    masked = start(NUMAPAGE_SHM='1')
finally:
    os.umask(old_mask)
st = os.stat(shm_path(masked.pid))
assert st.st_mode & 0o777 == 0o600 and st.st_uid == UID, oct(st.st_mode)
stop(masked)
r = stat('-r', t.pid)
(head, cols, rows), = tables(r.stdout)
assert cols == ['node0', 'node3', 'Total'], cols
assert head.startswith('Per-node statistics of process %d (stat_target)' % t.pid), head
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
units = {line.split()[0]: line.split()[1] for line in r.stdout.split('\n')[3:] if line.strip()}
assert units['numa_hit'] == 'pages' and units['malloc_requested'] == 'bytes' and units['threads'] == 'count', units
# Counters of events that are not pages (list cuts, refills, chunks) are counts, never MiB.
for name in ('freelist_corrupt', 'pcp_refill', 'chunks_mapped', 'remote_free', 'pool_contended'):
    assert units[name] == 'count', (name, units)

# MiB by default (page and byte counters; counts stay counts), -z hides zero rows, -c narrows.
page = os.sysconf('SC_PAGE_SIZE')
r = stat(t.pid)
line = next(l for l in r.stdout.split('\n') if l.startswith('numa_hit '))
assert line.split()[1:] == ['MiB', '%.2f' % (1000 * page / 2**20), '%.2f' % (7 * page / 2**20),
                            '%.2f' % (1007 * page / 2**20)], line
assert r.stdout.split('\n')[1].startswith('(MiB;'), r.stdout
line = next(l for l in r.stdout.split('\n') if l.startswith('malloc_requested '))
assert line.split()[2] == '%.2f' % (123456 / 2**20), line
r = stat('-z', '-r', t.pid)
(head, cols, rows), = tables(r.stdout)
assert sorted(rows) == sorted(['numa_hit', 'local_node', 'numa_miss', 'numa_foreign', 'pages_in_use',
                               'malloc_requested']), rows
wide = max(len(l) for l in stat('-r', t.pid).stdout.split('\n')[2:])
narrow = max(len(l) for l in stat('-c', '-r', t.pid).stdout.split('\n')[2:])
assert narrow < wide, (narrow, wide)
# Folding: at 40 columns the two nodes and the Total go in blocks of their own.
r = stat('-r', '-w', '40', t.pid)
assert max(len(l) for l in r.stdout.split('\n')[2:]) <= 40, r.stdout
blocks = r.stdout.strip().split('\n\n')
assert len(blocks) == 3 and [next(l for l in b.split('\n') if l.startswith(' ')).split() for b in blocks] == [['node0'], ['node3'], ['Total']], r.stdout
r = subprocess.run([EXE, 'stat', '-r', str(t.pid)], capture_output=True, text=True, env=dict(os.environ, COLUMNS='40'))
assert max(len(l) for l in r.stdout.split('\n')[2:]) <= 40, r.stdout

# --json: one object with the process and its nodes, raw counts.
j = json.loads(stat('--json', t.pid).stdout)
assert [p['pid'] for p in j['processes']] == [t.pid], j
hit = {n['node']: n['numa_hit'] for n in j['nodes']}
assert hit == {0: 1000, 3: 7}, j

# A pattern finds it by its command line (and never the stat command itself).
r = stat('-r', 'stat_targ[e]t %s' % TAG)
(head, cols, rows), = tables(r.stdout)
expect(rows, 'numa_hit', [1000, 7, 1007])
r = stat('no-such-program-xyz', rc=1)
assert "no process using libnumapage has a command line matching 'no-such-program-xyz'" in r.stderr, r.stderr

# Two processes: the sum, and each with -P.
t2 = start()
r = stat('-r', t.pid, t2.pid)
(head, cols, rows), = tables(r.stdout)
assert head.startswith('Per-node statistics of 2 processes: %d (stat_target), %d (stat_target)' % (t.pid, t2.pid)), head
expect(rows, 'numa_hit', [2000, 14, 2014])
r = stat('-r', '-P', t.pid, t2.pid)
tabs = tables(r.stdout)
assert len(tabs) == 3 and tabs[0][0].startswith('Process %d' % t.pid) and tabs[2][0].startswith('Sum of the 2'), r.stdout
expect(tabs[1][2], 'numa_hit', [1000, 7, 1007])
expect(tabs[2][2], 'numa_hit', [2000, 14, 2014])
j = json.loads(stat('--json', t.pid, t2.pid).stdout)
assert len(j['processes']) == 2 and {n['node']: n['numa_hit'] for n in j['nodes']} == {0: 2000, 3: 14}, j
stop(t2)

# A wrapper: a process that does not publish stands for the ones it started.
wrapper = subprocess.Popen(['sh', '-c', '"$0"; :', TARGET], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
words = wrapper.stdout.readline().split()
assert words and words[0] == 'ready', words
r = stat('-r', wrapper.pid)
(head, cols, rows), = tables(r.stdout)
assert head.startswith('Per-node statistics of process %s (stat_target)' % words[1]), head
assert 'does not use libnumapage; showing the 1 process it started' in r.stderr, r.stderr
wrapper.stdin.write('exit\n')
wrapper.stdin.flush()
assert wrapper.wait(timeout=10) == 0

# ---- refreshing: -i prints the totals, then the changes of each interval ------------------------
# No -n: samples until the 50 events have shown up, whenever the target gets to count them, and
# one more; a fixed number of samples (-n 4: 1.5 s) missed them on a loaded machine.
s = subprocess.Popen([EXE, 'stat', '-r', str(t.pid), '-i', '0.5'], stdout=subprocess.PIPE, text=True)


def next_table():
    lines = []
    while True:
        line = s.stdout.readline()
        assert line, 'stat ended early'
        if line == '\n' and lines:
            return ''.join(lines)
        lines.append(line)


tabs = tables(next_table())
t.stdin.write('count 50\n')
t.stdin.flush()
assert t.stdout.readline().strip() == 'ok'
end = time.monotonic() + 60
while not tabs[-1][2] or len(tabs) == 1:
    assert time.monotonic() < end, 'the 50 events never showed up: %r' % tabs
    tabs += tables(next_table())
tabs += tables(next_table())  # one more interval: nothing else changed
s.kill()
s.wait()
s.stdout.close()
expect(tabs[0][2], 'numa_hit', [1000, 7, 1007])
changes = [tab for tab in tabs[1:] if tab[2]]
assert all(re.match(r'^\d\d:\d\d:\d\d  \+\d+\.\d s: changes since the previous sample$', tab[0]) for tab in tabs[1:]), tabs
# The 50 events show up once, in the interval they were made in, and nothing else changed.
assert len(changes) == 1 and changes[0][2] == {'numa_hit': [50, 0, 50]}, tabs
# -n: that many samples, then it ends.
tabs = tables(stat('-r', t.pid, '-i', '0.1', '-n', '3').stdout)
assert len(tabs) == 3 and not tabs[1][2] and not tabs[2][2], tabs

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
    hdr = struct.pack('<QIIiIiiIIII64i64iQiiQ', 0x31544154534e504e, 4, 4096, sleeper.pid, UID, 1, 1, 4096,
                      584, 640, 64, *([0] * 128), PIDNS, 0, 0, 0)
    fake = shm_path(sleeper.pid)
    with open(fake, 'wb') as f:
        f.write(hdr.ljust(4096, b'\0'))
    os.chmod(fake, 0o600)
    r = stat(sleeper.pid, rc=1)
    assert 'does not use libnumapage' in r.stderr, r.stderr
    assert not os.path.exists(fake), fake
    # The same file naming a keeper that lives (numapage run --stats, header.keeper) stays for
    # it: a process that is exiting maps nothing either, and a stat loop beside a job took the
    # files of its children that ended with _exit (a helper: 1 to 4 of 20 lost in 15 of 20
    # jobs). Once the keeper is gone, it is stale again.
    keeper = subprocess.Popen(['sleep', '30'])
    try:
        with open(fake, 'wb') as f:
            f.write(hdr[:-12] + struct.pack('<i', keeper.pid) + hdr[-8:] + b'\0' * (4096 - len(hdr)))
        os.chmod(fake, 0o600)
        r = stat(sleeper.pid, rc=1)
        assert os.path.exists(fake), 'a kept file was removed'
    finally:
        keeper.kill()
        keeper.wait()
    r = stat(sleeper.pid, rc=1)
    assert not os.path.exists(fake), fake
finally:
    sleeper.kill()
    sleeper.wait()

t = start(NUMAPAGE_SHM='0')
r = stat(t.pid, rc=1)
assert 'does not use libnumapage' in r.stderr and 'NUMAPAGE_SHM=0' in r.stderr, r.stderr
stop(t)

# ---- killed processes leave their files; the next stat removes them without a word ----------------
killed = []
for _ in range(3):
    k = start()
    k.kill()
    k.wait()
    assert os.path.exists(shm_path(k.pid))
    killed.append(k.pid)
r = stat(killed[0], rc=1)
assert 'no process %d' % killed[0] in r.stderr and 'removed' not in r.stderr, r.stderr
assert not any(os.path.exists(shm_path(p)) for p in killed), killed
# A process that starts publishing removes them too (the library's start-up sweep).
k = start()
k.kill()
k.wait()
t2 = start()
assert not os.path.exists(shm_path(k.pid))
stop(t2)

# ---- a killed process its parent has not reaped yet (a zombie) ------------------------------------------
# Its file is its last word, which its parent (`numapage run`) reads once it reaps it: stat says
# it has exited and leaves the file; once reaped, the file is a leftover like any other.
z = start()
z.kill()
for _ in range(1000):
    with open('/proc/%d/stat' % z.pid) as fh:
        if fh.read().rsplit(')', 1)[1].split()[0] == 'Z':
            break
    time.sleep(0.01)
r = stat(z.pid, rc=1)
assert 'process %d has exited' % z.pid in r.stderr, r.stderr
stat('no-such-program-xyz', rc=1)
assert os.path.exists(shm_path(z.pid)), 'a zombie\'s file was removed'
z.wait()
stat('no-such-program-xyz', rc=1)
assert not os.path.exists(shm_path(z.pid))

# ---- a process whose main thread has ended while another runs on -------------------------------------
# Its leader shows Z in /proc, like a zombie's, but the process lives and publishes: shown.
t = start()
t.stdin.write('leader-exit\n')
t.stdin.flush()
assert t.stdout.readline().strip() == 'ok'
for _ in range(1000):
    with open('/proc/%d/stat' % t.pid) as fh:
        if fh.read().rsplit(')', 1)[1].split()[0] == 'Z':
            break
    time.sleep(0.01)
(head, cols, rows), = tables(stat('-r', t.pid).stdout)
expect(rows, 'numa_hit', [1000, 7, 1007])
stop(t)

# ---- a process that exits while watched ---------------------------------------------------------------
t = start()
s = subprocess.Popen([EXE, 'stat', '-r', str(t.pid), '-i', '0.2'], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
seen = []
while sum(line.startswith('Per-node') or ' s: changes since' in line for line in seen) < 2:
    line = s.stdout.readline()
    assert line, 'stat ended early'
    seen.append(line)
stop(t)
# Read through the same buffered pipe objects (communicate() would skip what readline buffered).
out = ''.join(seen) + s.stdout.read()
err = s.stderr.read()
s.wait(timeout=10)
assert s.returncode == 0 and 'has exited' in err and len(tables(out)) >= 2, (out, err)

# ---- hostile and broken files: never a hang, a crash, a wrong owner or a wrong removal --------------
NAMES = ['numa_hit', 'numa_miss', 'numa_foreign', 'local_node', 'other_node', 'interleave_hit',
         'pages_alloc', 'pages_free', 'pages_in_use']


def craft(pid, uid=UID, nnodes=1, osid=(0,), thr=28, val=12345, size=4096, pidns=None):
    """A complete live-view file (struct np_vmstat_shm_header of version 4, then names, then
    totals)."""
    ni, names_off = len(NAMES), 584
    totals_off = (names_off + 32 * ni + 63) // 64 * 64
    osids = list(osid) + [0] * (64 - len(osid))
    thrs = [thr] * 64
    buf = bytearray(size)
    hdr = struct.pack('<QIIiIiiIIII64i64iQiiQ', 0x31544154534e504e, 4, size, pid, uid, nnodes, ni, 4096,
                      names_off, totals_off, 8 * ni, *thrs, *osids, PIDNS if pidns is None else pidns, 0, 0, 0)
    buf[:len(hdr)] = hdr
    for k, n in enumerate(NAMES):
        buf[names_off + 32 * k:names_off + 32 * k + len(n)] = n.encode()
        buf[names_off + 32 * k + 31] = 0  # kind: a page counter
    for i in range(nnodes):
        for k in range(ni):
            o = totals_off + i * 8 * ni + 8 * k
            buf[o:o + 8] = struct.pack('<q', val)
    return bytes(buf)


# A stand-in publisher: creates its own file from the bytes given (hex), named with namespace
# PUB_NS, maps it as the library does (so it is not taken for a stale leftover), says "ready",
# and waits; "exit" removes it. A file already at its name was left by a dead process that had
# its pid (killed before it removed it): removed first, as the library does.
PUBLISHER = r"""
import mmap, os, sys
if os.environ.get('PUB_COMM'):
    with open('/proc/self/comm', 'w') as fh:
        fh.write(os.environ['PUB_COMM'])
path = '/dev/shm/numapage.%d.%d.%s' % (os.geteuid(), os.getpid(), os.environ['PUB_NS'])
data = bytes.fromhex(sys.stdin.readline().strip())
try:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
except FileExistsError:
    os.unlink(path)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
os.write(fd, data)
m = mmap.mmap(fd, len(data), mmap.MAP_SHARED, mmap.PROT_READ)
print('ready', os.getpid(), flush=True)
sys.stdin.readline()
os.unlink(path)
"""


PUBTAG = TAG + '-publisher'  # on every stand-in publisher's command line, for patterns


def publish(prefix=(), uid=UID, comm=None, name_ns=None, **fields):
    """Starts a stand-in publisher whose file holds craft(pid, **fields), named with namespace
    name_ns (default: the header's, as a real publisher names it); returns (process, path)."""
    # The header carries the publisher's pid: sent once it is known, before the file is made.
    ns = name_ns if name_ns is not None else fields.get('pidns', PIDNS)
    env = dict(os.environ, PUB_NS=str(ns))
    if comm:
        env['PUB_COMM'] = comm
    p = subprocess.Popen([*prefix, sys.executable, '-c', PUBLISHER, PUBTAG], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True, env=env)
    p.stdin.write(craft(p.pid, uid=uid, **fields).hex() + '\n')
    p.stdin.flush()
    words = p.stdout.readline().split()
    assert words == ['ready', str(p.pid)], words
    return p, shm_path(p.pid, uid, ns)


def unpublish(p):
    p.stdin.write('exit\n')
    p.stdin.flush()
    assert p.wait(timeout=10) == 0


sleeper = subprocess.Popen(['sleep', '300'])
planted = []
try:
    # A FIFO named like a live file of ours (its pid alive): stat neither blocks on it nor
    # removes it (not a regular file: not ours to judge).
    fifo = shm_path(sleeper.pid)
    os.mkfifo(fifo, 0o600)
    planted.append(fifo)
    r = stat('no-such-program-xyz', rc=1)
    r = stat(sleeper.pid, rc=1)
    assert 'does not use libnumapage' in r.stderr, r.stderr
    assert os.path.exists(fifo)
    os.unlink(fifo)
    planted.remove(fifo)

    # Only canonical names are judged (and removed when stale): "+pid", "0pid", " uid", "0ns",
    # a name without the namespace (the library's before 2026-12) are not the library's,
    # whatever sscanf makes of them.
    pid = sleeper.pid
    odd = ['%s/numapage.%d.+%d.%d' % (SHM, UID, pid, PIDNS), '%s/numapage.%d.0%d.%d' % (SHM, UID, pid, PIDNS),
           '%s/numapage. %d.%d.%d' % (SHM, UID, pid, PIDNS), '%s/numapage.0%d.%d.%d' % (SHM, UID, pid, PIDNS),
           '%s/numapage.%d.%d.0%d' % (SHM, UID, pid, PIDNS), '%s/numapage.%d.%d' % (SHM, UID, pid)]
    for f in odd:
        with open(f, 'wb') as fh:
            fh.write(craft(sleeper.pid))
        planted.append(f)
    stat('no-such-program-xyz', rc=1)
    assert all(os.path.exists(f) for f in odd), [f for f in odd if not os.path.exists(f)]

    # A file published in another pid namespace sharing /dev/shm (a container's): its pid names
    # no process here, yet it is not judged stale and removed (its publisher may be running).
    # Nor is one named with this namespace whose header says another (planted).
    gone = subprocess.Popen(['true'])
    gone.wait()
    other_ns, disguised = shm_path(gone.pid, ns=PIDNS + 7), shm_path(gone.pid)
    for f in (other_ns, disguised):
        with open(f, 'wb') as fh:
            fh.write(craft(gone.pid, pidns=PIDNS + 7))
        os.chmod(f, 0o600)
        planted.append(f)
    stat('no-such-program-xyz', rc=1)
    assert os.path.exists(other_ns) and os.path.exists(disguised), (other_ns, disguised)
    with open(disguised, 'wb') as fh:  # the same file of this namespace: stale, removed
        fh.write(craft(gone.pid))
    stat('no-such-program-xyz', rc=1)
    assert not os.path.exists(disguised) and os.path.exists(other_ns), (other_ns, disguised)
    planted.remove(disguised)

    # A live process's file published in another pid namespace (a container sharing /dev/shm,
    # whose process has this pid there), also one named with this namespace (planted): not
    # this process's statistics, by pid or by pattern, and not removed either.
    for name_ns in (None, PIDNS):
        p, f = publish(pidns=PIDNS + 7, name_ns=name_ns, val=4242)
        r = stat('-r', p.pid, rc=1)
        assert '4242' not in r.stdout and 'does not use libnumapage' in r.stderr, (r.stdout, r.stderr)
        r = stat('-r', PUBTAG, rc=1)
        assert '4242' not in r.stdout and 'no process using libnumapage' in r.stderr, (r.stdout, r.stderr)
        assert os.path.exists(f)
        unpublish(p)

    # A pattern shows every matching process it can read: one whose file it cannot read is
    # reported (exit status 1), and the others are still shown.
    good, fg = publish(val=111)
    bad, fb = publish(thr=-1)
    r = stat('-r', PUBTAG, rc=1)
    (head, cols, rows), = tables(r.stdout)
    assert 'process %d (' % good.pid in head and str(bad.pid) not in head, head
    expect(rows, 'numa_hit', [111, 111])
    assert '%s has an unknown layout' % fb in r.stderr, r.stderr
    unpublish(bad)
    unpublish(good)

    # A command name with control characters (any user sets its own): never sent raw to the
    # terminal of whoever reads it (root may); --json escapes it.
    esc = '\x1b[2J\x1b]0;x\x07'
    p, f = publish(comm=esc)
    for args in (('-r', p.pid), ('-r', '-P', p.pid, p.pid)):
        r = stat(*args)
        assert '\x1b' not in r.stdout and '\x07' not in r.stdout, repr(r.stdout)
        assert '%d (?[2J?]0;x?)' % p.pid in r.stdout.split('\n')[0], repr(r.stdout)
    assert json.loads(stat('--json', p.pid).stdout)['processes'][0]['command'] == esc
    unpublish(p)
    # A C1 control (U+009B, the 8-bit CSI) too; a UTF-8 name keeps its characters where the
    # locale's character set is UTF-8, and elsewhere every byte above 0x7f is '?' (U+00DB's
    # second byte is 0x9b).
    p, f = publish(comm='\u00e9\u009b2J\u00db')
    for lc, want in (('C.UTF-8', '\u00e9?2J\u00db'), ('C', '????2J??')):
        r = subprocess.run([EXE, 'stat', '-r', str(p.pid)], capture_output=True, timeout=30,
                           env=dict(os.environ, LC_ALL=lc))
        first = r.stdout.split(b'\n')[0].decode('utf-8', 'replace')
        assert r.returncode == 0 and '%d (%s)' % (p.pid, want) in first, (lc, first)
    unpublish(p)
    p, f = publish(comm=esc, pidns=PIDNS + 7)
    r = stat(p.pid, rc=1)
    assert '\x1b' not in r.stderr and '(?[2J?]0;x?) does not use libnumapage' in r.stderr, repr(r.stderr)
    unpublish(p)

    # A file that shrinks while it is watched: reported, never a SIGBUS.
    p, f = publish()
    s = subprocess.Popen([EXE, 'stat', '--json', '-i', '0.1', str(p.pid)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    first = s.stdout.readline()
    assert json.loads(first)['processes'][0]['pid'] == p.pid, first
    os.truncate(f, 0)
    out, err = s.communicate(timeout=30)
    assert s.returncode == 1 and 'changed' in err, (s.returncode, err)
    unpublish(p)

    # Headers that are nonsense: a negative or repeated node id, a negative threshold, a counter
    # no process can reach. Refused as a layout this tool cannot read.
    for fields in ({'nnodes': 3, 'osid': (-5, 7, 8)}, {'nnodes': 3, 'osid': (0, 7, 7)}, {'thr': -1},
                   {'val': 2**62 + 1}, {'val': -2**63}):
        p, f = publish(**fields)
        r = stat('-r', p.pid, rc=1)
        assert 'unknown layout' in r.stderr, (fields, r.stderr)
        unpublish(p)
    # Large but plausible counters on several nodes: the Total is never a wrapped-around sum.
    p, f = publish(nnodes=3, osid=(0, 1, 2), val=2**62 - 1)
    (head, cols, rows), = tables(stat('-r', p.pid).stdout)
    assert rows['numa_hit'][3] > 0 and rows['numa_hit'][3] >= rows['numa_hit'][0], rows['numa_hit']
    j = json.loads(stat('--json', p.pid).stdout)
    assert [n['numa_hit'] for n in j['nodes']] == [2**62 - 1] * 3, j
    unpublish(p)

    if UID == 0 and shutil.which('setpriv'):
        nobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']
        if subprocess.run([*nobody, EXE, '--version'], capture_output=True).returncode == 0:
            nob = subprocess.Popen([*nobody, 'sleep', '300'])
            planted.append(nob)
            write_as_nobody = 'import os, sys; fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600); ' \
                              'os.write(fd, bytes.fromhex(sys.argv[2]))'
            # Another user's files named for root's process (which does not publish): root's
            # stat neither shows them as that process's nor removes them.
            theirs = shm_path(sleeper.pid, 65534)
            mine = shm_path(sleeper.pid, 0)
            for f, u in ((theirs, 65534), (mine, 0)):
                subprocess.run([*nobody, sys.executable, '-c', write_as_nobody, f,
                                craft(sleeper.pid, uid=u, val=777).hex()], check=True)
                planted.append(f)
            r = stat('-r', sleeper.pid, rc=1)
            assert '777' not in r.stdout and 'does not use libnumapage' in r.stderr, (r.stdout, r.stderr)
            assert os.path.exists(theirs) and os.path.exists(mine)
            # A leftover of nobody's dead process whose pid root's process has now: nobody's
            # stat cannot read root's maps, but root's process is not the file's.
            os.unlink(mine)
            planted.remove(mine)
            r = stat('-r', sleeper.pid, rc=1, prefix=nobody)
            assert '777' not in r.stdout and 'another user' in r.stderr, (r.stdout, r.stderr)
            assert not os.path.exists(theirs)
            planted.remove(theirs)
            # Another user's process that publishes nothing: the file it would have is named with
            # its uid, not the caller's.
            r = stat(nob.pid, rc=1)
            assert 'no %s' % shm_path(nob.pid, 65534) in r.stderr, r.stderr
            # A consistent file of another user's live process: root reads it.
            p, f = publish(prefix=nobody, uid=65534, val=555)
            (head, cols, rows), = tables(stat('-r', p.pid).stdout)
            expect(rows, 'numa_hit', [555, 555])
            unpublish(p)
        else:
            print('SKIP owner checks: uid 65534 cannot run', EXE)
    else:
        print('SKIP owner checks: needs root and setpriv')
finally:
    sleeper.kill()
    sleeper.wait()
    for f in planted:
        if isinstance(f, subprocess.Popen):
            f.kill()
            f.wait()
        elif os.path.lexists(f):
            os.unlink(f)

# ---- standard output that cannot be written: an error, not success ------------------------------------
t = start()
with open('/dev/full', 'w') as full:
    for args in ((t.pid,), ('--json', t.pid), ('--help',)):
        r = subprocess.run([EXE, 'stat', *map(str, args)], stdout=full, stderr=subprocess.PIPE, text=True, timeout=30)
        assert r.returncode == 1 and 'standard output' in r.stderr, (args, r.returncode, r.stderr)
        if args != ('--help',):  # with the reason, also after stat's own flush saw it first
            assert 'No space left on device' in r.stderr, (args, r.stderr)
stop(t)

# ---- arguments: each error says what was wrong ------------------------------------------------------
for args, want in (((), 'no process given'), ((1, '-i', '0'), "-i takes a number of seconds"),
                   ((1, '-n', '0'), "-n takes a count of at least 1, not '0'"),
                   ((1, '-n'), '-n needs an argument'), (('-Pn',), '-n needs an argument'),
                   (('--interval',), '--interval needs an argument'), (('--bogus', 1), 'unknown option --bogus'),
                   (('-w', '5', 1), '-w takes a number of columns'), (('-q', 1), 'unknown option -q'),
                   (('-zq', 1), 'unknown option -q'), (('--json=x', 1), 'option --json takes no argument'), (('([',), 'nor a valid pattern'), (('0',), "'0' is not a process id")):
    r = stat(*args, rc=2)
    assert want in r.stderr and 'usage: numapage stat' in r.stderr, (args, r.stderr)
# A pattern no other process on the machine can hold in its command line (a plain 'abc'
# matched CPython's test_abc running under the library beside this test).
absent = 'np-absent-%d-%x' % (os.getpid(), int.from_bytes(os.urandom(4), 'little'))
r = stat(absent, rc=1)
assert "matching '%s'" % absent in r.stderr, r.stderr
r = stat('--help')
assert r.stdout.startswith('usage: numapage stat'), r.stdout
print('ok')
