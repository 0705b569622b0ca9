#!/usr/bin/env python3
"""The numapage command through its real binary (meson suite 'cli'), where libnumapage owns
malloc (not in sanitizer builds: exit 77).

usage: test_run_cmd.py NUMAPAGE_EXE LIBNUMAPAGE_SO OPTION_API_STATIC WAITID_SHIM_SO

- run: a library that cannot be loaded stops the job before it starts (125, the loader's
  words); a missing command (127), a killed one (its signal named), no report at all (125);
  one that ends with _exit or a signal is counted from what it left in /dev/shm;
  --json - is stdout, --json -- is refused; every process of a job is counted: a Python
  os.fork() child, and `redis-server --daemonize yes` whose daemon outlives its parent (run
  waits for it), with --per-process naming each; `numapage stat` sees the forked daemon and a
  Python child, and follows `numapage run &` to the processes it started.
- the library's diagnostics: unknown NUMAPAGE_* names and NUMAPAGE_CONF keys warn once, with a
  suggestion; NUMAPAGE_CONF values apply; NUMAPAGE_VERBOSE lists every option and its source;
  a set-user-ID program ignores all of it (AT_SECURE).
- options: values in force and where they came from, for here and for a PID; help, --version.
"""
import json
import os
import re
import signal
import shutil
import socket
import stat as st
import subprocess
import sys
import tempfile
import time

EXE, LIB, OPTION_API, SHIM = map(os.path.abspath, sys.argv[1:5])
PY = '/usr/bin/python3'
BASE = {k: v for k, v in os.environ.items() if not k.startswith('NUMAPAGE_') and k != 'LD_PRELOAD'}
BASE['NUMAPAGE_LIB'] = LIB
tmp = tempfile.mkdtemp(prefix='numapage-cli.')


def live_file(pid):
    """The live statistics file of our process pid (src/vmstat/vmstat.h)."""
    return '/dev/shm/numapage.%d.%d.%d' % (os.geteuid(), pid, os.stat('/proc/self/ns/pid').st_ino)


def run(*args, rc=0, env=None, timeout=120, **kw):
    """numapage ARGS; exits the test unless its status is rc (None: any)."""
    e = dict(BASE)
    e.update(env or {})
    p = subprocess.run([EXE, *args], capture_output=True, text=True, env=e, timeout=timeout, **kw)
    if rc is not None and p.returncode != rc:
        sys.exit('numapage %s: exit %d, wanted %d\nstdout:\n%s\nstderr:\n%s' % (
            ' '.join(map(str, args)), p.returncode, rc, p.stdout, p.stderr))
    return p


def run_job(name, *cmd, opts=('--per-process',), rc=0, env=None):
    """numapage run --stats OPTS --json <tmp>/NAME.json -- CMD: its process and the JSON report."""
    out = os.path.join(tmp, name + '.json')
    p = run('run', '--stats', *opts, '--json', out, '--', *cmd, rc=rc, env=env)
    return p, json.load(open(out))


def requested(x):
    """malloc_requested of a report or of one process in it, summed over its nodes."""
    return sum(n['malloc_requested'] for n in x['nodes'])


def job_procs(stderr):
    m = re.search(r'per-node statistics of the job, (\d+) process', stderr)
    assert m, stderr
    return int(m.group(1))


def wait_for(cond, what, seconds=30):
    """Polls for a state another process reaches (not a timing assertion: the deadline only
    turns a hang into a failure)."""
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            sys.exit('gave up waiting for ' + what)
        time.sleep(0.05)


try:
    # ---- help and version ---------------------------------------------------------------------
    # Under a small address-space limit the command starts (a helper's test: its 75 MB of
    # static tables made it die at exec under ulimit -v 65536, every command).
    import resource
    lim = lambda: resource.setrlimit(resource.RLIMIT_AS, (64 << 20, 64 << 20))
    assert run('--version', preexec_fn=lim).stdout.startswith('numapage ')
    h = run('--help').stdout
    assert '--version' in h and 'numapage help' in h, h
    assert run('--version').stdout.startswith('numapage '), 'version'
    assert run('help', 'stat').stdout.startswith('usage: numapage stat'), 'help stat'
    assert 'unknown command' in run('help', 'bogus', rc=2).stderr
    # help is a command too, and extra words are refused as the other commands refuse them.
    assert run('help', 'help').stdout.startswith('usage: numapage COMMAND'), 'help help'
    assert 'one command at most' in run('help', 'run', 'stat', rc=2).stderr
    assert 'unknown command' in run('bogus', rc=2).stderr
    assert 'no command given' in run(rc=2).stderr

    # Standard output that cannot be written is an error, not success.
    with open('/dev/full', 'w') as full:
        for args in (('--help',), ('--version',), ('help',), ('help', 'stat'), ('run', '--help'),
                     ('options',), ('topology',)):
            r = subprocess.run([EXE, *args], stdout=full, stderr=subprocess.PIPE, text=True, env=BASE, timeout=60)
            assert r.returncode == 1 and 'standard output' in r.stderr, (args, r.returncode, r.stderr)
    # An unknown option is named as it was given.
    for cmd in ('run', 'options', 'topology', 'stat'):
        assert 'unknown option -q' in run(cmd, '-q', 'x', rc=2).stderr, cmd
        assert 'unknown option --bogus' in run(cmd, '--bogus', 'x', rc=2).stderr, cmd
    assert 'option --json takes no argument' in run('options', '--json=x', rc=2).stderr

    # ---- run: failures are loud -----------------------------------------------------------------
    for args in ((), ('--stats',)):
        p = run('run', *args, '--lib', os.path.join(tmp, 'missing.so'), '--', 'true', rc=125)
        assert 'cannot load libnumapage' in p.stderr and 'No such file' in p.stderr and 'was not run' in p.stderr, p.stderr
        p = run('run', *args, '--lib', '/etc/hostname', '--', 'true', rc=125)
        assert 'cannot load libnumapage' in p.stderr, p.stderr
    p = run('run', '--', 'no-such-command-xyz', rc=127)
    assert 'cannot run no-such-command-xyz: No such file or directory' in p.stderr and 'loadable' not in p.stderr, p.stderr
    p = run('run', '--stats', '--', 'no-such-command-xyz', rc=127)
    assert 'cannot run' in p.stderr and 'no process' not in p.stderr, p.stderr
    p = run('run', '--stats', '--', 'sh', '-c', 'kill -9 $$', rc=137)
    assert 'sh was killed by signal 9' in p.stderr and 'loadable' not in p.stderr, p.stderr
    # A program that ends with _exit (no exit report) is counted from the totals it left in
    # /dev/shm, and its own status is kept; so is one killed by a signal.
    for code, rc in (('os._exit(3)', 3), ('os.kill(os.getpid(), 9)', 137)):
        p, j = run_job('exit', PY, '-c', 'import os\nkeep = [bytes(2000) for _ in range(20000)]\n' + code, opts=(),
                       rc=rc)
        assert 'ended without an exit report' in p.stderr and 'no process' not in p.stderr, p.stderr
        assert j['processes'] == 1 and j['per_process'][0]['command'] == 'python3', j
        assert requested(j) >= 20000 * 2000 // 2, j
        assert not os.path.exists(live_file(j['per_process'][0]['pid']))
    busybox = shutil.which('busybox')
    if busybox and 'not a dynamic' in subprocess.run(['ldd', busybox], capture_output=True, text=True).stdout + \
            subprocess.run(['ldd', busybox], capture_output=True, text=True).stderr:
        p = run('run', '--stats', '--', busybox, 'true', rc=125)
        assert 'no process of the job ran with libnumapage' in p.stderr, p.stderr
    else:
        print('SKIP static program check: no static busybox')
    p = run('run', '--json', '--', 'true', rc=2)
    assert "--json needs a file name (or - for standard output), not '--'" in p.stderr, p.stderr
    assert not os.path.exists('--') and not os.path.exists('-')
    p = run('run', '--json', '-', '--', PY, '-c', 'x = [bytes(1000) for _ in range(1000)]')
    j = json.loads(p.stdout)
    assert j['processes'] == 1 and j['per_process'][0]['command'] == 'python3', j
    assert requested(j) > 100000, j
    assert not os.path.exists('-')
    # A program that writes its title over its command line (PostgreSQL, nginx, sshd) is named
    # as it started (a helper's test: backends reported "al] idle").
    title_py = ('import ctypes\nlibc = ctypes.CDLL(None)\n'
                'p = ctypes.c_void_p.in_dll(libc, "program_invocation_short_name").value\n'
                'n = len(ctypes.string_at(p))\nctypes.memmove(p, b"T" * n, n)\n'
                'x = [bytes(1000) for _ in range(1000)]\n')
    p = run('run', '--json', '-', '--', PY, '-c', title_py)
    j = json.loads(p.stdout)
    assert j['per_process'][0]['command'] == 'python3', j
    run('run', '--place', 'sideways', '--', 'true', rc=2)

    # ---- run: the library path must survive LD_PRELOAD ---------------------------------------------
    # ld.so splits LD_PRELOAD at spaces and colons: such a path is refused, not silently lost.
    for d in ('a b', 'a:b'):
        os.mkdir(os.path.join(tmp, d))
        odd = os.path.join(tmp, d, 'libnumapage.so')
        shutil.copy(LIB, odd)
        for args in ((), ('--stats',)):
            p = run('run', *args, '--lib', odd, '--', 'true', rc=125)
            assert 'LD_PRELOAD' in p.stderr and 'was not run' in p.stderr, p.stderr
    # A relative --lib is made absolute: a job that changes directory still loads it.
    p = run('run', '--stats', '--lib', './' + os.path.basename(LIB), '--', 'sh', '-c', 'cd / && %s -c pass' % PY,
            cwd=os.path.dirname(LIB))
    assert job_procs(p.stderr) == 2, p.stderr

    # ---- run: started with SIGCHLD ignored (inherited), statuses are still the command's ----------------
    ign = lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    run('run', '--', 'sh', '-c', 'exit 7', rc=7, preexec_fn=ign)
    p = run('run', '--', 'sh', '-c', 'kill -SEGV $$', rc=139, preexec_fn=ign)
    assert 'killed by signal 11' in p.stderr, p.stderr
    run('run', '--', 'no-such-command-xyz', rc=127, preexec_fn=ign)
    p = run('run', '--stats', '--', 'sh', '-c', 'exit 3', rc=3, preexec_fn=ign)
    assert job_procs(p.stderr) == 1, p.stderr

    # ---- run: the zombie whose leftover was read is the one reaped ------------------------------------
    # Two orphans end without a report; the shim (see waitid_shim.c) kills the one orphaned first
    # just after run looked at the other one's zombie. Both are counted, neither file stays. The
    # other one dies only once it is run's (sh has exited: no shell can reap it first).
    vf = os.path.join(tmp, 'victim.pid')
    victim = 'import os, time\nopen(%r, "w").write(str(os.getpid()))\nos.rename(%r, %r)\ntime.sleep(600)' % (
        vf + '.tmp', vf + '.tmp', vf)
    other = 'import os, sys, time\nwhile not os.path.exists(%r) or os.getppid() != int(sys.argv[1]): time.sleep(0.01)\n' \
            'print(os.getpid(), flush=True)\nos.kill(os.getpid(), 9)' % vf
    p, j = run_job('race', 'sh', '-c', '"$0" -c "$1" & "$0" -c "$2" $PPID & exit 0', PY, victim, other, opts=(),
                   env={'LD_PRELOAD': SHIM, 'NP_SHIM_VICTIM_FILE': vf})
    vpid, opid = int(open(vf).read()), int(p.stdout)
    pids = [x['pid'] for x in j['per_process']]
    assert vpid in pids and opid in pids and job_procs(p.stderr) == 3, (vpid, opid, pids, p.stderr)
    assert not os.path.exists(live_file(vpid))

    # ---- run: a leftover that is not the user's own is neither read nor removed --------------------------
    if os.geteuid() == 0 and shutil.which('setpriv'):
        nobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']
        job = subprocess.Popen([EXE, 'run', '--stats', '--', PY, '-c',
                                'import os, sys\nprint(os.getpid(), flush=True)\nsys.stdin.readline()\nos._exit(0)'],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(BASE, NUMAPAGE_SHM='0'))
        jpid = int(job.stdout.readline())
        planted = '/dev/shm/numapage.0.%d' % jpid
        try:
            subprocess.run([*nobody, 'touch', planted], check=True)
            job.stdin.write('\n')
            job.stdin.flush()
            job.communicate(timeout=60)
            assert os.path.exists(planted), 'run removed a file it does not own'
        finally:
            if os.path.exists(planted):
                os.unlink(planted)
    else:
        print('SKIP foreign leftover check: needs root and setpriv')

    # ---- run: every process of the job, a Python os.fork() child included -------------------------
    fork_py = '''
import os, sys
data = [bytes(2000) for _ in range(20000)]
pid = os.fork()
if pid == 0:
    more = [bytes(1000) for _ in range(30000)]
    sys.exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
'''
    p, j = run_job('fork', PY, '-c', fork_py, opts=('--per-process', '-r'))
    assert job_procs(p.stderr) == 2, p.stderr
    procs = j['per_process']
    assert len(procs) == 2, j
    parent, child = sorted(procs, key=lambda x: x['parent'])
    assert parent['parent'] == 0 and child['parent'] == parent['pid'], procs
    # The child counts what it allocated after the fork (objects above pymalloc's 512 bytes
    # come from malloc), not its parent's history again.
    assert requested(child) >= 30000 * 1000 and requested(child) < requested(parent), (requested(child), requested(parent))
    assert requested(j) == requested(parent) + requested(child), j
    assert 'forked from %d' % parent['pid'] in p.stderr, p.stderr
    # A child that outlives its parent and ends with _exit (no report: its live file is read)
    # was forked all the same (it said parent 0, as for a process started by exec).
    orphan_py = '''
import os, sys, time
if os.fork() == 0:
    time.sleep(0.5)
    keep = [bytes(2000) for _ in range(2000)]
    os._exit(0)
sys.exit(0)
'''
    p, j = run_job('orphan', PY, '-c', orphan_py)
    procs = j['per_process']
    assert len(procs) == 2, procs
    first, orphan = sorted(procs, key=lambda x: x['parent'])
    assert first['parent'] == 0 and orphan['parent'] == first['pid'], procs
    assert 'forked from %d' % first['pid'] in p.stderr, p.stderr
    # A child that ends with _exit and is reaped by its own parent never was numapage run's
    # zombie: its live file named its parent, and it is counted (it was missing, its file left).
    reaped_py = '''
import os
data = [bytes(2000) for _ in range(2000)]
pid = os.fork()
if pid == 0:
    more = [bytes(1000) for _ in range(30000)]
    os._exit(0)
os.waitpid(pid, 0)
'''
    p, j = run_job('reaped', PY, '-c', reaped_py)
    procs = j['per_process']
    assert j['processes'] == 2 and len(procs) == 2, j
    first, child = sorted(procs, key=lambda x: x['parent'])
    assert first['parent'] == 0 and child['parent'] == first['pid'] and child['command'] == first['command'], procs
    assert requested(child) >= 30000 * 1000, child
    assert not os.path.exists(live_file(child['pid']))
    assert 'ended without an exit report' in p.stderr, p.stderr
    # The same child, and then the job starts another program: its start sweeps /dev/shm of
    # the files of processes that are gone, the reaped child's among them, before the job
    # ends. The child is counted all the same (it was lost: 2 processes, not 3).
    swept_py = reaped_py + '''
import subprocess
subprocess.run(['/bin/true'], check=True)
'''
    p, j = run_job('swept', PY, '-c', swept_py)
    procs = j['per_process']
    assert j['processes'] == 3 and len(procs) == 3, j
    child = [x for x in procs if x['parent'] != 0]
    assert len(child) == 1 and requested(child[0]) >= 30000 * 1000, procs
    assert not os.path.exists(live_file(child[0]['pid']))
    # Children that each fork and reap a grandchild, all ending with _exit, and two programs
    # after the job's Python has ended, whose starts sweep all their files (18 of 20
    # grandchildren were once counted: a helper). The files name numapage run as their keeper,
    # so no sweep takes them while it lives: the test once waited, in each process, until
    # numapage run's watcher held its child's file, and under load that wait ran out.
    grand_py = '''
import os, sys
for i in range(20):
    pid = os.fork()
    if pid == 0:
        a = [bytes(1000) for _ in range(3000)]
        g = os.fork()
        if g == 0:
            b = [bytes(1000) for _ in range(3000)]
            os._exit(0)
        os.waitpid(g, 0)
        os._exit(0)
    if os.waitpid(pid, 0)[1] != 0:
        sys.exit('a child failed')
'''
    _, j = run_job('grand', '/bin/sh', '-c', '"$0" -c "$1" && /bin/true && /bin/true', PY, grand_py, opts=())
    assert j['processes'] == 1 + 1 + 20 + 20 + 2, j['processes']
    # A program the job's shell started (fork, exec) that ends with _exit, reaped by the shell:
    # its file says it was started by exec, not whose it was; it was not counted (a helper).
    _, j = run_job('exec_exit', '/bin/sh', '-c',
                   '"$0" -c "import os; a = [bytes(1000) for _ in range(3000)]; os._exit(0)"; /bin/true', PY)
    assert j['processes'] == 3, j['processes']
    py = [x for x in j['per_process'] if x['command'] == 'python3']
    assert len(py) == 1 and requested(py[0]) >= 3000 * 1000, j['per_process']
    # Children that end with _exit, reaped, while the job goes on: their files name numapage
    # run as keeper, so no sweep takes them, and the watcher removes their names once they are
    # gone (it holds the files open, read at the end): /dev/shm does not fill up for the whole
    # job. Each process of the user that starts reads that directory; a helper's job of 8,000
    # such children made every start 49 ms slower. The job waits for the names to go (the
    # deadline only turns a hang into a failure) and all are counted.
    many_py = '''
import os, sys, time
kids = []
for i in range(100):
    pid = os.fork()
    if pid == 0:
        a = [bytes(1000) for _ in range(3000)]
        os._exit(0)
    os.waitpid(pid, 0)
    kids.append(pid)
ns = os.stat('/proc/self/ns/pid').st_ino
names = ['/dev/shm/numapage.%d.%d.%d' % (os.geteuid(), pid, ns) for pid in kids]
for _ in range(600):
    if not any(os.path.exists(n) for n in names):
        sys.exit(0)
    time.sleep(0.1)
sys.exit('%d of the files of gone children still in /dev/shm' % sum(os.path.exists(n) for n in names))
'''
    _, j = run_job('many', PY, '-c', many_py, opts=())
    assert j['processes'] == 101, j['processes']
    # A run inside a run's job: each counts its own job. The inner job's children that end
    # with _exit name the inner run as their keeper; the outer run's watcher holds their files
    # too, but neither removes their names nor counts them (a helper: the inner job lost up to
    # 14 of 101 processes to the outer's harvest, and the outer counted 16 to 102). The inner
    # run here has no watcher (names only) and its job lasts a second after its children end,
    # so the outer's harvest has had its turns.
    nest_py = '''
import os, time
for i in range(10):
    pid = os.fork()
    if pid == 0:
        a = [bytes(1000) for _ in range(3000)]
        os._exit(0)
    os.waitpid(pid, 0)
time.sleep(1)
'''
    inner = os.path.join(tmp, 'inner.json')
    p, j = run_job('outer', 'env', 'NP_SHIM_NO_INOTIFY=1', EXE, 'run', '--stats', '--json', inner, '--', PY, '-c',
                   nest_py, opts=(), env={'LD_PRELOAD': SHIM})
    assert json.load(open(inner))['processes'] == 11, (json.load(open(inner))['processes'], p.stderr)
    # The outer job: the inner numapage run and the child it forks to try loading the library.
    assert {x['command'] for x in j['per_process']} == {'numapage'}, j['per_process']
    # A gone process of the job whose pid an outside program takes after the watcher removed
    # the gone one's name (a helper: its counts dropped in 8 of 9 runs; the watcher let go of
    # its file at the newcomer's removal of its own, and skipped it at the end since the pid
    # lived). Pids are steered with ns_last_pid in a pid namespace of the test's own, and
    # /dev/shm is a tmpfs of its own: root only.
    unshare = shutil.which('unshare')
    if os.geteuid() == 0 and unshare:
        # The two shells meet at FIFOs (no process started while the pid is steered: a review
        # saw the job's polling `sleep` take pid 500), and the outer one waits for the leaf's
        # name to go (the harvest) with a loop of builtins.
        sync = tempfile.mkdtemp(prefix='numapage-pidreuse.')
        os.mkfifo(os.path.join(sync, 'f1'))
        os.mkfifo(os.path.join(sync, 'f2'))
        job_sh = ('echo 499 > /proc/sys/kernel/ns_last_pid; "$0" -c "import os; a = [bytes(1000) for _ in range(3000)]; '
                  'os._exit(0)" & wait; echo > "$1/f1"; read x < "$1/f2"; sleep 0.5')
        outer_sh = (': > "$1/in_ns"; ns=$(stat -L -c %i /proc/self/ns/pid); '
                    '"$0" run --stats --json "$1/r.json" -- /bin/sh -c "$2" "$3" "$1" 2>/dev/null & rp=$!; '
                    'read x < "$1/f1"; i=0; while [ -e /dev/shm/numapage.0.500.$ns ] && [ $i -lt 5000000 ]; '
                    'do i=$((i + 1)); done; '
                    'echo 499 > /proc/sys/kernel/ns_last_pid; LD_PRELOAD="$4" /bin/true; echo > "$1/f2"; wait $rp')
        r = subprocess.run([unshare, '-m', '/bin/sh', '-c', 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$@"', 'sh',
                            unshare, '-pf', '--mount-proc', '/bin/sh', '-c', outer_sh, EXE, sync, job_sh, PY, LIB],
                           capture_output=True, text=True, env=BASE, timeout=120)
        if os.path.exists(os.path.join(sync, 'in_ns')):  # the namespace was made: numapage run must work
            assert r.returncode == 0, (r.returncode, r.stderr)
            j = json.load(open(os.path.join(sync, 'r.json')))
            leaf = [x for x in j['per_process'] if x['pid'] == 500]
            assert len(leaf) == 1 and requested(leaf[0]) >= 3000 * 1000, \
                j['per_process']
        else:
            print('SKIP pid reuse check: cannot make a pid namespace here:', r.stderr.strip()[-200:])
        shutil.rmtree(sync, ignore_errors=True)
    else:
        print('SKIP pid reuse check: needs root and unshare')
    # Four processes of one job with the same pid (pids wrap: a long build under pid_max
    # 32768), two that report, one that ends with _exit and one more that reports: each counts.
    # The second report wrote over the first's %p.json, the file left by the third was taken
    # for the file of a process that had reported, and the fourth's start removed it (no
    # watcher here, which could have held it): the job lost three of the four without a word.
    if os.geteuid() == 0 and unshare:
        sync = tempfile.mkdtemp(prefix='numapage-pidreport.')
        job_sh = ('for n in 3000 5000 7000 9000; do echo 499 > /proc/sys/kernel/ns_last_pid; '
                  '"$0" -c "import os; a = [bytes(1000) for _ in range($n)]; $n == 7000 and os._exit(0)" & wait; done')
        outer_sh = ': > "$1/in_ns"; exec "$0" run --stats --json "$1/r.json" -- /bin/sh -c "$2" "$3"'
        r = subprocess.run([unshare, '-m', '/bin/sh', '-c', 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$@"', 'sh',
                            unshare, '-pf', '--mount-proc', '/bin/sh', '-c', outer_sh, EXE, sync, job_sh, PY],
                           capture_output=True, text=True, env=dict(BASE, LD_PRELOAD=SHIM, NP_SHIM_NO_INOTIFY='1'),
                           timeout=120)
        if os.path.exists(os.path.join(sync, 'in_ns')):
            assert r.returncode == 0, (r.returncode, r.stderr)
            j = json.load(open(os.path.join(sync, 'r.json')))
            at500 = sorted(requested(x) // 1000000 for x in j['per_process'] if x['pid'] == 500)
            assert len(at500) == 4 and all(a >= b for a, b in zip(at500, (3, 5, 7, 9))), j['per_process']
        else:
            print('SKIP pid reuse report check: cannot make a pid namespace here:', r.stderr.strip()[-200:])
        shutil.rmtree(sync, ignore_errors=True)
    # The same shapes with no watcher (the shim makes inotify fail in numapage run, as on a
    # kernel without it or past the user's inotify limit): a grandchild that ends with _exit,
    # reaped by its parent, which then ends normally, and two programs whose starts sweep; and
    # the exec'd program above. Their files name numapage run as their keeper
    # (NUMAPAGE_SHM_KEEPER): no sweep removes them while it lives, and it reads them. Before,
    # the grandchild's file went with the first sweep once its parent had ended (a race of
    # the watcher under load: note68), and without the watcher both were lost every time.
    kid_py = '''
import os
a = [bytes(1000) for _ in range(3000)]
c = os.fork()
if c == 0:
    g = os.fork()
    if g == 0:
        b = [bytes(1000) for _ in range(5000)]
        os._exit(0)
    os.waitpid(g, 0)
else:
    os.waitpid(c, 0)
'''
    blind = {'LD_PRELOAD': SHIM, 'NP_SHIM_NO_INOTIFY': '1'}
    # `numapage stat` in between, which removes the files of processes that are gone, leaves
    # it too (it took it).
    p, j = run_job('blind_grand', '/bin/sh', '-c', '"$0" -c "$1" && "$2" stat . >/dev/null 2>&1; /bin/true && /bin/true',
                   PY, kid_py, EXE, env=blind)
    assert j['processes'] == 1 + 1 + 1 + 1 + 1 + 2, (j['processes'], p.stderr)
    grand = [x for x in j['per_process'] if x['parent'] != 0 and requested(x) >= 5000 * 1000]
    assert len(grand) == 1, j['per_process']
    assert not os.path.exists(live_file(grand[0]['pid']))
    _, j = run_job('blind_exec_exit', '/bin/sh', '-c',
                   '"$0" -c "import os; a = [bytes(1000) for _ in range(3000)]; os._exit(0)"; /bin/true', PY, env=blind)
    assert j['processes'] == 3, j['processes']
    # A program that works and then execs another (a wrapper, a driver, `bash -c` running its
    # last command): one process, whose counts hold what it counted before the exec, as the
    # kernel's counters do; with the watcher and without it. The second program's start took
    # the first one's live file for a dead process's and removed it: the job lost the first
    # part without a word.
    second = 'b = [bytes(1000) for _ in range(5000)]'
    _, j = run_job('exec_second', PY, '-c', second)
    alone = requested(j)
    chain = 'import os, sys; a = [bytes(1000) for _ in range(3000)]; os.execv(sys.executable, [sys.executable, "-c", %r])' % second
    for name, env in (('exec_chain', None), ('blind_exec_chain', blind)):
        _, j = run_job(name, PY, '-c', chain, env=env)
        assert j['processes'] == 1 and requested(j) >= alone + 3000 * 1000, (name, alone, j['per_process'])
    # The same with the watcher behind the exec (numapage run stopped across it, as a loaded
    # machine can delay it, and the exec'd program reaped by its shell meanwhile): the file from
    # before the exec, which the watcher holds open, is not counted a second time (a review:
    # the first program's events in the second's report and again from the held file).
    ready, go = os.path.join(tmp, 'chain.ready'), os.path.join(tmp, 'chain.go')
    first = ('import os, sys, time\na = [bytes(1000) for _ in range(3000)]\n'
             'open(%r, "w").write(str(os.getpid()))\nos.rename(%r, %r)\n'
             'while not os.path.exists(%r): time.sleep(0.01)\n'
             'os.execv(sys.executable, [sys.executable, "-c", %r])\n') % (ready + '.tmp', ready + '.tmp', ready, go, second)
    out = os.path.join(tmp, 'chain_lag.json')
    rp = subprocess.Popen([EXE, 'run', '--stats', '--json', out, '--', '/bin/sh', '-c', '"$0" -c "$1"; true', PY, first],
                          env=BASE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: os.path.exists(ready), 'the first program')
        cpid = int(open(ready).read())

        def held():
            for fd in os.listdir('/proc/%d/fd' % rp.pid):
                try:
                    if os.readlink('/proc/%d/fd/%s' % (rp.pid, fd)) == live_file(cpid):
                        return True
                except OSError:
                    pass
            return False
        wait_for(held, "the watcher's hold of the first program's file")
        os.kill(rp.pid, signal.SIGSTOP)
        open(go, 'w').close()
        wait_for(lambda: not os.path.exists('/proc/%d' % cpid), 'the exec\'d program to end and be reaped')
    finally:
        os.kill(rp.pid, signal.SIGCONT)
    assert rp.wait(timeout=120) == 0, rp.stderr.read()
    j = json.load(open(out))
    at = [x for x in j['per_process'] if x['pid'] == cpid]
    assert len(at) == 1 and requested(at[0]) >= alone + 3000 * 1000 and j['processes'] == 2, (alone, j['per_process'])
    # A command name with a tab and a byte that is not UTF-8 comes back as it was written:
    # JSON escapes are decoded (the tab came back as 'u0009').
    odd = os.path.join(tmp, 'tab\there')
    shutil.copy('/bin/true', odd)
    p = run('run', '--stats', '--per-process', '--json', '-', '--', odd)
    assert json.loads(p.stdout)['per_process'][0]['command'] == 'tab\there', p.stdout
    bad = os.path.join(os.fsencode(tmp), b'bad\xffbyte')
    shutil.copy('/bin/true', bad)
    p = run('run', '--stats', '--per-process', '--json', '-', '--', bad)
    assert json.loads(p.stdout)['per_process'][0]['command'] == 'bad\ufffdbyte', p.stdout

    # ---- stat on a Python os.fork() child while it runs ------------------------------------------------
    child_py = '''
import os, sys
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    keep = [bytes(1000) for _ in range(20000)]
    os.write(w, b"x")
    sys.stdin.readline()
    os._exit(0)
os.read(r, 1)
print(pid, flush=True)
os.waitpid(pid, 0)
'''
    env = dict(BASE, LD_PRELOAD=LIB)
    pr = subprocess.Popen([PY, '-c', child_py], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    kid = int(pr.stdout.readline())
    p = run('stat', '--json', str(kid))
    j = json.loads(p.stdout)
    assert [x['pid'] for x in j['processes']] == [kid], j
    assert sum(n['malloc_in_use'] for n in j['nodes']) >= 20000 * 1000, j
    p = run('stat', '-r', str(pr.pid), str(kid))
    assert 'Per-node statistics of 2 processes' in p.stdout, p.stdout
    pr.stdin.write('\n')
    pr.stdin.flush()
    assert pr.wait(timeout=60) == 0
    # The child left with os._exit: its file was not removed at exit; the next stat removes it quietly.
    p = run('stat', str(kid), rc=1)
    assert 'no process' in p.stderr and 'removed' not in p.stderr, p.stderr
    assert not os.path.exists(live_file(kid))

    # ---- stat on a forked child that has allocated nothing its caches could not serve -------------------
    # It publishes at its first such allocation (src/vmstat/vmstat_print.c): until then stat
    # must not call it a process that does not use libnumapage.
    idle_py = '''
import os, sys
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    os.read(r, 1)
    os._exit(0)
os.close(r)
print(pid, flush=True)
sys.stdin.readline()
os.write(w, b"x")
os.waitpid(pid, 0)
'''
    pr = subprocess.Popen([PY, '-c', idle_py], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    kid = int(pr.stdout.readline())
    p = run('stat', '-r', str(kid), rc=None)
    assert 'does not use libnumapage' not in p.stderr, p.stderr
    if p.returncode == 1:  # the common case: Python's child allocated nothing past its caches
        assert 'process %d (python3) uses libnumapage but has published no statistics yet: forked from process %d' % (
            kid, pr.pid) in p.stderr, p.stderr
    else:  # it did, and published
        assert p.returncode == 0 and 'process %d (python3)' % kid in p.stdout, (p.returncode, p.stdout, p.stderr)
    pr.stdin.write('\n')
    pr.stdin.flush()
    assert pr.wait(timeout=60) == 0

    # Any process may map another's live file (a monitor): it is not said to use libnumapage
    # unless it descends from that one or has the library loaded (a review).
    pub = subprocess.Popen([PY, '-c', 'import sys; x = bytearray(1 << 20); print("ready", flush=True); sys.stdin.readline()'],
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    assert pub.stdout.readline().strip() == 'ready'
    mapper_py = '''
import mmap, os, sys
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
print("ready", flush=True)
sys.stdin.readline()
'''
    mapper = subprocess.Popen([PY, '-c', mapper_py, live_file(pub.pid)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, env=BASE)
    assert mapper.stdout.readline().strip() == 'ready'
    p = run('stat', str(mapper.pid), rc=1)
    assert 'process %d (python3) does not use libnumapage' % mapper.pid in p.stderr, p.stderr
    for x in (mapper, pub):
        x.stdin.write('\n')
        x.stdin.flush()
        assert x.wait(timeout=60) == 0

    # ---- stat follows `numapage run -- prog &` to the program ------------------------------------------
    bg = subprocess.Popen([EXE, 'run', '--', PY, '-c', 'import sys; x = [bytes(64) for _ in range(10000)]; '
                           'print("ready", flush=True); sys.stdin.readline()'],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=BASE)
    assert bg.stdout.readline().strip() == 'ready'
    p = run('stat', str(bg.pid))
    assert 'Per-node statistics of process' in p.stdout and '(python3)' in p.stdout, p.stdout
    assert 'showing the 1 process it started' in p.stderr, p.stderr
    bg.stdin.write('\n')
    bg.stdin.flush()
    assert bg.wait(timeout=60) == 0

    # ---- redis-server --daemonize yes: the daemon is seen and counted ------------------------------------
    redis = shutil.which('redis-server')
    if redis and shutil.which('redis-cli'):
        s = socket.socket()
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
        s.close()
        rdir = os.path.join(tmp, 'redis')
        os.mkdir(rdir)
        pidfile = os.path.join(rdir, 'redis.pid')
        rjson = os.path.join(rdir, 'job.json')
        job = subprocess.Popen([EXE, 'run', '--stats', '--per-process', '--json', rjson, '--', redis,
                                '--daemonize', 'yes', '--port', str(port), '--bind', '127.0.0.1',
                                '--save', '', '--appendonly', 'no', '--dir', rdir, '--pidfile', pidfile,
                                '--logfile', os.path.join(rdir, 'log')],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=BASE)
        try:
            cli = ['redis-cli', '-h', '127.0.0.1', '-p', str(port)]
            wait_for(lambda: os.path.exists(pidfile) and
                     subprocess.run(cli + ['ping'], capture_output=True, text=True).stdout.strip() == 'PONG',
                     'redis to answer')
            daemon = int(open(pidfile).read())
            assert job.poll() is None, 'numapage run returned while the daemon runs'
            for i in range(200):
                subprocess.run(cli + ['set', 'k%d' % i, 'v' * 1000], capture_output=True, check=True)
            p = run('stat', '-r', str(daemon))
            assert 'process %d (redis-server)' % daemon in p.stdout, p.stdout
            p = run('stat', '--json', 'redis-server.*%d' % port)
            j = json.loads(p.stdout)
            assert [x['pid'] for x in j['processes']] == [daemon], j
        finally:
            subprocess.run(cli + ['shutdown', 'nosave'], capture_output=True)
        outs, errs = job.communicate(timeout=60)
        assert job.returncode == 0, (job.returncode, errs)
        assert 'waiting for the 1 process it left running' in errs, errs
        assert job_procs(errs) == 2, errs
        j = json.load(open(rjson))
        pids = sorted(x['pid'] for x in j['per_process'])
        assert daemon in pids and len(pids) == 2, j
        d = next(x for x in j['per_process'] if x['pid'] == daemon)
        assert d['command'] == 'redis-server' and d['parent'] in pids, d
        assert 'process %d (redis-server), forked from' % daemon in errs, errs
    else:
        print('SKIP redis: redis-server or redis-cli missing (.ci/deps installs them)')

    # ---- the library's diagnostics --------------------------------------------------------------------
    env = dict(BASE, LD_PRELOAD=LIB, NUMAPAGE_STAS='1', NUMAPAGE_CONF='bind=strict,plac=spread,purge_mb=lots')
    p = subprocess.run(['/bin/true'], capture_output=True, text=True, env=env)
    warn = p.stderr.split('\n')
    assert "numapage: warning: NUMAPAGE_STAS is not a libnumapage option (did you mean NUMAPAGE_STATS?); ignored " \
           "(numapage options lists them)" in warn, p.stderr
    assert any("NUMAPAGE_CONF: 'plac' is not a libnumapage option (did you mean PLACE?)" in l for l in warn), p.stderr
    assert any('NUMAPAGE_CONF: PURGE_MB=lots is not valid' in l for l in warn), p.stderr
    assert p.stderr.count('STAS') == 1, p.stderr  # once
    p = subprocess.run(['/bin/true'], capture_output=True, text=True, env=dict(BASE, LD_PRELOAD=LIB))
    assert p.stderr == '', p.stderr  # nothing unless asked
    p = subprocess.run(['/bin/true'], capture_output=True, text=True,
                       env=dict(BASE, LD_PRELOAD=LIB, NUMAPAGE_VERBOSE='1', NUMAPAGE_CONF='bind=strict',
                                NUMAPAGE_PURGE_MB='32'))
    opts = dict(re.findall(r'^numapage: option (\w+) = (.*)$', p.stderr, re.M))
    table = re.findall(r'^NUMAPAGE_(\w+)=', subprocess.run([EXE, 'options'], capture_output=True, text=True,
                                                          env=BASE, check=True).stdout, re.M)
    assert opts['BIND'] == 'strict (NUMAPAGE_CONF)' and opts['PURGE_MB'] == '32 (NUMAPAGE_PURGE_MB)' and \
        opts['PLACE'] == 'none (default)' and sorted(opts) == sorted(table) and len(table) >= 11, (p.stderr, table)
    assert re.search(r'^numapage: node \d+: \d+ MiB, \d+ CPU\(s\), fallback .*; statistics fold at \d+$', p.stderr, re.M), p.stderr
    assert 'live statistics published in /dev/shm/' in p.stderr, p.stderr
    # A machine of one node is not discovered with hwloc, in a real start-up too: there the
    # first malloc comes from inside libnuma's constructor, before libnuma can answer.
    ndir = '/sys/devices/system/node'
    nodes = [n for n in os.listdir(ndir) if re.fullmatch(r'node\d+', n)] if os.path.isdir(ndir) else ['node0']
    one_node = nodes == ['node0'] and not any(k.startswith('HWLOC_') for k in BASE)  # those steer hwloc
    assert ('hwloc not run' in p.stderr) == one_node, (nodes, p.stderr)
    # On one memory node the policy is not read (libnuma, which reads it, is not loaded): the
    # line says so, rather than name the default whatever the process runs under.
    numactl = shutil.which('numactl')
    if one_node and numactl:
        p = subprocess.run([numactl, '--preferred=0', '/bin/true'], capture_output=True, text=True,
                           env=dict(BASE, LD_PRELOAD=LIB, NUMAPAGE_VERBOSE='1'))
        # numactl, preloaded too, says it as well as /bin/true.
        line = {l for l in p.stderr.splitlines() if l.startswith('numapage: memory policy:')}
        assert line == {'numapage: memory policy: not read (one memory node: its memory has nowhere else to go)'}, \
            p.stderr
    # libhwloc (and what it needs: libm, libudev) is loaded only where a table needs it: never on
    # a machine of one node, always for a rehearsal.
    maps = subprocess.run(['cat', '/proc/self/maps'], capture_output=True, text=True, check=True,
                          env=dict(BASE, LD_PRELOAD=LIB)).stdout
    assert ('libhwloc' in maps) != one_node and 'libnumapage' in maps, maps
    maps = subprocess.run(['cat', '/proc/self/maps'], capture_output=True, text=True, check=True,
                          env=dict(BASE, LD_PRELOAD=LIB, NUMAPAGE_TOPOLOGY=os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'topologies', '2node.xml'))).stdout
    assert 'libhwloc' in maps, maps
    # Set at run time: the report is written where the program asked, at its exit.
    rep = os.path.join(tmp, 'late.json')
    subprocess.run([OPTION_API, 'report', rep], check=True, env=BASE)
    assert 'nodes' in json.load(open(rep)), rep
    # A symbolic link at the report's path is not followed (one planted in a shared directory
    # would send the report over another file): nothing is written, and a warning says why.
    victim = os.path.join(tmp, 'victim.txt')
    with open(victim, 'w') as f:
        f.write('keep\n')
    link = os.path.join(tmp, 'link.json')
    os.symlink(victim, link)
    p = subprocess.run([OPTION_API, 'report', link], capture_output=True, text=True, env=BASE)
    assert open(victim).read() == 'keep\n' and 'is a symbolic link; not followed' in p.stderr, p
    # A report named for its pid whose name is taken (an earlier process's report with that
    # pid: pids wrap) goes under the next free name, <name>.1, and leaves the other as it was.
    # It was emptied and written over. Likewise a name taken by a symbolic link.
    rdir = tempfile.mkdtemp(prefix='numapage-taken.', dir=tmp)
    taker = ('import os, sys; d = sys.argv[1]; p = os.getpid(); open("%s/%d.json" % (d, p), "w").write("earlier\\n"); '
             'os.symlink("%s/victim" % d, "%s/%d.json.1" % (d, p)); a = [bytes(1000) for _ in range(2000)]; print(p)')
    # That is in a job of numapage run (a keeper named: this test stands in for it); elsewhere
    # the name is emptied and written as before, so a program whose pid comes back (a
    # container's pid 1) keeps its latest report there (a review of the first version).
    p = subprocess.run([PY, '-c', taker, rdir], capture_output=True, text=True, check=True,
                       env=dict(BASE, LD_PRELOAD=LIB, NUMAPAGE_STATS='json:%s/%%p.json' % rdir,
                                NUMAPAGE_SHM_KEEPER=str(os.getpid())))
    pid = int(p.stdout)
    assert sorted(os.listdir(rdir)) == ['%d.json' % pid, '%d.json.1' % pid, '%d.json.2' % pid], (os.listdir(rdir), p.stderr)
    assert open(os.path.join(rdir, '%d.json' % pid)).read() == 'earlier\n'
    rep = json.load(open(os.path.join(rdir, '%d.json.2' % pid)))
    assert rep['pid'] == pid and requested(rep) >= 2000 * 1000, rep
    shutil.rmtree(rdir)
    os.mkdir(rdir)
    p = subprocess.run([PY, '-c', taker, rdir], capture_output=True, text=True, check=True,
                       env=dict(BASE, LD_PRELOAD=LIB, NUMAPAGE_STATS='json:%s/%%p.json' % rdir))
    pid = int(p.stdout)
    assert sorted(os.listdir(rdir)) == ['%d.json' % pid, '%d.json.1' % pid], (os.listdir(rdir), p.stderr)
    assert json.load(open(os.path.join(rdir, '%d.json' % pid)))['pid'] == pid
    # A FIFO at the name, with no reader: a warning, and the program ends (it waited in the
    # open for good: a review). Nor does numapage run wait on a FIFO a process of its job made
    # in the report directory (the run's read of the reports hung there).
    fifo = 'import os, sys; os.mkfifo("%s/%d.json" % (sys.argv[1], os.getpid())); print(os.getpid())'
    p = subprocess.run([PY, '-c', fifo, rdir], capture_output=True, text=True, check=True, timeout=60,
                       env=dict(BASE, LD_PRELOAD=LIB, NUMAPAGE_STATS='json:%s/%%p.json' % rdir))
    assert 'cannot write %s/%d.json' % (rdir, int(p.stdout)) in p.stderr, p.stderr
    p, j = run_job('fifo_in_reports', PY, '-c', 'import os; os.mkfifo(os.path.dirname(os.environ["NUMAPAGE_STATS"][5:]) + "/x")')
    assert j['processes'] == 1, (j, p.stderr)
    # A path of 4,080 bytes is written under its own name (paths past 4,071 were cut to a
    # shorter one, silently); one too long for the report's 4,096 is refused with a warning.
    deep = tmp
    while len(deep) < 3840:
        deep = os.path.join(deep, 'd' * 200)
        os.mkdir(deep)
    longrep = os.path.join(deep, 'r' * (4080 - len(deep) - 1))
    subprocess.run([OPTION_API, 'report', longrep], check=True, env=BASE)
    assert len(longrep) == 4080 and 'nodes' in json.load(open(longrep)), len(longrep)
    assert os.listdir(deep) == [os.path.basename(longrep)], os.listdir(deep)

    # Secure execution (set-user-ID): every NUMAPAGE_* variable is ignored, silently.
    if os.geteuid() == 0 and shutil.which('setpriv'):
        sdir = tempfile.mkdtemp(prefix='numapage-suid.')
        os.chmod(sdir, 0o755)
        prog = os.path.join(sdir, 'option_api')
        shutil.copy(OPTION_API, prog)
        nobody = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups']
        senv = dict(BASE, NUMAPAGE_CONF='bind=strict,stats=1', NUMAPAGE_VERBOSE='1', NUMAPAGE_STAS='1',
                    NUMAPAGE_BIND='none')
        os.chmod(prog, 0o755)
        plain = subprocess.run(nobody + [prog, 'show'], capture_output=True, text=True, env=senv)
        if plain.returncode == 0:
            assert plain.stdout.strip() == 'bind=none verbose=1 stats=1' and 'NUMAPAGE_STAS' in plain.stderr, plain
            os.chmod(prog, 0o4755)  # set-user-ID root, run by nobody: AT_SECURE
            sec = subprocess.run(nobody + [prog, 'show'], capture_output=True, text=True, env=senv)
            assert sec.returncode == 0 and sec.stdout.strip() == 'bind=preferred verbose=0 stats=' and \
                sec.stderr == '', sec
            # `numapage options PID` shows what such a process runs with: the defaults, and why
            # (it showed NUMAPAGE_BIND=none from the environment the process ignores).
            w = subprocess.Popen(nobody + [prog, 'wait'], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True, env=senv)
            try:
                assert w.stdout.readline().strip() == 'ready'
                p = run('options', str(w.pid))
                assert 'NUMAPAGE_BIND=preferred  (default preferred;' in p.stdout and \
                    'runs in secure-execution mode' in p.stderr, (p.stdout, p.stderr)
                j = json.loads(run('options', '--json', str(w.pid)).stdout)
                assert j['secure'] is True and {x['name']: x for x in j['options']}['NUMAPAGE_BIND']['value'] == \
                    'preferred', j
            finally:
                w.stdin.close()
                w.wait()
        else:
            print('SKIP secure-execution check: uid 65534 cannot run', prog, plain.stderr)
        shutil.rmtree(sdir)
    else:
        print('SKIP secure-execution check: needs root and setpriv')

    # ---- options: what is in force, and where it came from ----------------------------------------------
    oenv = {'NUMAPAGE_CONF': 'bind=strict,stats=1', 'NUMAPAGE_STATS': '0'}
    p = run('options', env=oenv)
    assert 'NUMAPAGE_BIND=strict  (set by NUMAPAGE_CONF; default preferred; numa_page_option_set can change it)' in p.stdout, p.stdout
    assert 'NUMAPAGE_STATS=0  (set by NUMAPAGE_STATS; default (off);' in p.stdout, p.stdout
    assert 'NUMAPAGE_PURGE_MB=64  (default 64)' in p.stdout, p.stdout
    j = json.loads(run('options', '--json', env=oenv).stdout)
    o = {x['name']: x for x in j['options']}
    assert o['NUMAPAGE_BIND']['value'] == 'strict' and o['NUMAPAGE_BIND']['source'] == 'NUMAPAGE_CONF', o
    assert o['NUMAPAGE_TOPOLOGY']['runtime'] is False and o['NUMAPAGE_VERBOSE']['runtime'] is True, o
    # Another process's: from its environment, all of it, also one larger than 1 MiB or of
    # thousands of variables (the variable after the first MiB or the 8,191st was shown at its
    # default before).
    for extra, place in (({}, 'spread'), ({'BIG%d' % i: 'x' * 130000 for i in range(9)}, 'fill'),
                         ({'V%d' % i: 'y' for i in range(9000)}, 'fill')):
        sl = subprocess.Popen(['sleep', '30'], env=dict(BASE, **extra, NUMAPAGE_PLACE=place))
        try:
            p = run('options', str(sl.pid))
            assert 'NUMAPAGE_PLACE=%s  (set by NUMAPAGE_PLACE; default none' % place in p.stdout, p.stdout
        finally:
            sl.kill()
            sl.wait()
    # A process with no environment to read (kthreadd): said so, not "No such process".
    try:
        with open('/proc/2/comm') as fh:
            kthreadd = fh.read().strip() == 'kthreadd'
    except OSError:
        kthreadd = False
    if kthreadd:
        assert 'process 2 has no environment to read' in run('options', '2', rc=1).stderr
    assert 'unknown option --bogus' in run('options', '--bogus', rc=2).stderr
    assert "'x' is not a process id" in run('options', 'x', rc=2).stderr
    p = run('options', env={'NUMAPAGE_STAS': '1'})
    assert 'did you mean NUMAPAGE_STATS?' in p.stderr, p.stderr
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print('ok')
