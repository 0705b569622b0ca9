#!/usr/bin/env python3
"""
tests/programs/live_file.py — the live statistics file (/dev/shm/numapage.<uid>.<pid>.<ns>) must never
cost the program its life, nor pile up. A process under the library publishes its counters in a
small file of /dev/shm, and so does every child it forks. Scenarios (a hostile review found each):

  fsize   Under RLIMIT_FSIZE below the file's size (`ulimit -f 0`, as sandboxes and online
          judges set it) the file's growth raised SIGXFSZ: every preloaded program was killed.
  full    With /dev/shm full (Docker's default 64 MB fills up), the file was only truncated to
          its size, and the first write to its mapping raised SIGBUS: the program died, and so
          did every child it forked. Needs root and `unshare -m` (a private, full tmpfs of 2 MiB
          on /dev/shm); exit 77 (skipped) without them.
  fork    A parent that forks children which leave with _exit (Python's multiprocessing,
          pre-forking servers) left one file per child until the next process start swept them:
          2,000 children, 2,000 files. The parent now sweeps them as it goes on forking.
  full_fork  The same, for a parent that could not publish (/dev/shm was full when it started)
          and whose children can (room came back): only a publishing parent swept, and every
          child's file stayed (a review). Root and `unshare -m`, as `full`.

  fork_quiet  A child that execs or leaves with _exit before allocating anything its inherited
          caches do not hold makes no live file (it cost every such fork about 10 system calls
          and a page); a child that allocates past them publishes, and `numapage stat` sees it.

  containers  Two containers sharing /dev/shm, each with its own pid namespace (a pod's, CI
          jobs' on one machine), run processes with the same small pids: the second process
          with pid 1 did not publish, its name taken by the first's file, which it may not
          remove (its process may be running). CI failed on a file an earlier run left at pid
          567. Both must publish, each its own file, each removed at exit. Root and
          `unshare -p`.

  nested  A container's pid 1 that makes a pid namespace for its children (a container
          runtime, a sandbox inside one) and forks: the child is pid 1 too, of the new
          namespace. The library keeps the namespace it read with the pid it read it under,
          and the child must not take its parent's: its live file names its own namespace.
          Root and `unshare -p`.
  nested_nohooks  The same pid 1 starts a sibling (publishing), makes a namespace for its
          children and forks one with _Fork, which runs no fork handler (as a raw clone), and
          that child forks 130 children of its own: its sweeps must judge the files of its own
          namespace only. A namespace kept by pid alone made it take its parent's, find no
          process of the sibling's pid there and remove the sibling's live file while the sibling ran (a review).
          Root and `unshare -p`.

  containers_noproc  The same with /proc hidden (a tmpfs over it): the namespace is unknown,
          and two pid 1 have one name. The second took the first's file, and the first
          removed the second's at its exit (a hostile test); and a start-up sweep removed
          another namespace's live file whose pid it did not have (a review). Now each
          removes only the file it made, and no sweep judges where the namespace is unknown.
          A taken name is still taken: an exec leaves the same. Root and `unshare -pm`.

Each scenario runs python3 under LD_PRELOAD=LIB and checks that it ran to its end, printed
what it should, said nothing on stderr, and that the library was there (/proc/self/maps).
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys

SKIP = 77

# Allocates, forks a child that allocates and exits with _exit, prints what it saw.
CHILD_AND_PARENT = r'''
import os, sys
blocks = [bytearray(n) for n in range(1, 5000, 7)]
pid = os.fork()
if pid == 0:
    more = [bytes(n) for n in range(1, 3000, 5)]
    os._exit(0 if len(more) == 600 else 3)
_, status = os.waitpid(pid, 0)
maps = open('/proc/self/maps').read()
print('loaded', 'libnumapage' in maps, 'child', status, 'blocks', len(blocks))
'''
EXPECTED = 'loaded True child 0 blocks 715\n'

# Forks N children, each allocates and leaves with _exit, reaped before the next fork; prints
# how many of their live files are still in /dev/shm after the last one. A child publishes at
# its first malloc slow path: 1 MiB is past any cache.
FORKS = r'''
import os, sys
n = int(sys.argv[1])
uid = os.geteuid()
pids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        x = bytearray(1 << 20)
        os._exit(0)
    os.waitpid(pid, 0)
    pids.append(pid)
ns = os.stat('/proc/self/ns/pid').st_ino
left = sum(os.path.exists('/dev/shm/numapage.%d.%d.%d' % (uid, p, ns)) for p in pids)
maps = open('/proc/self/maps').read()
print('loaded', 'libnumapage' in maps, 'left', left)
'''

# Frees /dev/shm's filler files, then runs FORKS.
FULL_FORKS = r'''
import os, sys
for f in ('/dev/shm/filler', '/dev/shm/filler2'):
    if os.path.exists(f):
        os.unlink(f)
sys.argv = ['forks', sys.argv[1]]
''' + FORKS

# Forks N children that leave at once with _exit, and N that exec /bin/true, each reaped
# before the next fork, and counts the live files their pids left (before any sweep: N is
# below SWEEP_EVERY). Then a child that allocates 4 MiB (past any cache: a slow path) says
# whether it maps a live file of its own, and leaves with _exit.
QUIET = r'''
import os, sys
n = int(sys.argv[1])
uid, ns = os.geteuid(), os.stat('/proc/self/ns/pid').st_ino
def live(pid):
    return os.path.exists('/dev/shm/numapage.%d.%d.%d' % (uid, pid, ns))
left = 0
for i in range(2 * n):
    pid = os.fork()
    if pid == 0:
        if i % 2:
            os.execv('/bin/true', ['true'])
        os._exit(0)
    os.waitpid(pid, 0)
    left += live(pid)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    big = bytearray(4 << 20)
    mine = '/dev/shm/numapage.%d.%d.%d' % (uid, os.getpid(), ns)
    os.write(w, b'1' if mine in open('/proc/self/maps').read() else b'0')
    os._exit(0)
said = os.read(r, 1).decode()
os.waitpid(pid, 0)
maps = open('/proc/self/maps').read()
print('loaded', 'libnumapage' in maps, 'left', left, 'worker', said, 'file', live(pid))
'''

# Prints the live file this process maps (none: "-"), then waits for a line on stdin.
MAPPED = r'''
import os, sys
files = sorted({l.split()[-1] for l in open('/proc/self/maps') if '/dev/shm/numapage.' in l})
print(os.getpid(), ' '.join(files) or '-', flush=True)
sys.stdin.readline()
'''

# Pid 1 of a namespace: allocates (its live file is made at start), makes a new pid namespace
# for its children and forks one, which allocates past any cache (it publishes) and prints its
# pid, its namespace, the live files it maps; then the parent prints its own.
NESTED = r'''
import ctypes, os, sys
blocks = [bytearray(n) for n in range(1, 5000, 7)]
if ctypes.CDLL(None, use_errno=True).unshare(0x20000000) != 0:  # CLONE_NEWPID
    print('unshare failed', ctypes.get_errno())
    sys.exit(77)
def mine():
    files = sorted({l.split()[-1] for l in open('/proc/self/maps') if '/dev/shm/numapage.' in l})
    return ' '.join(files) or '-'
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    big = bytearray(4 << 20)
    os.write(w, ('%d %d %s' % (os.getpid(), os.stat('/proc/self/ns/pid').st_ino, mine())).encode())
    os._exit(0)
said = os.read(r, 4096).decode()
os.waitpid(pid, 0)
print(said)
print(os.getpid(), os.stat('/proc/self/ns/pid').st_ino, mine())
'''

# Pid 1 of a namespace: starts a sibling that publishes and waits, makes a new pid namespace
# for its children, forks one with _Fork (no fork handlers run), which forks and reaps 130
# children (its sweeps run) and leaves; prints whether the sibling's live file is still there.
NESTED_NOHOOKS = r'''
import ctypes, os, subprocess, sys, time
sib = subprocess.Popen([sys.executable, '-c', 'x = bytearray(1 << 20); print(1, flush=True); input()'],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
sib.stdout.readline()
uid, ns = os.geteuid(), os.stat('/proc/self/ns/pid').st_ino
theirs = '/dev/shm/numapage.%d.%d.%d' % (uid, sib.pid, ns)
before = os.path.exists(theirs)
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x20000000) != 0:  # CLONE_NEWPID
    print('unshare failed', ctypes.get_errno())
    sys.exit(77)
pid = libc._Fork()
if pid == 0:
    for i in range(130):
        k = os.fork()
        if k == 0:
            os._exit(0)
        os.waitpid(k, 0)
    os._exit(0)
os.waitpid(pid, 0)
after = os.path.exists(theirs)
sib.stdin.write('\n')
sib.stdin.flush()
sib.wait()
print('sibling file before', before, 'after', after)
'''

# A child forks, a parent's sweep runs every this many forks (src/vmstat/vmstat_shm.c); the
# test's bound is twice that, so that it holds whatever the sweep's phase.
SWEEP_EVERY = 64


def env_with(lib):
    env = dict(os.environ)
    env['LD_PRELOAD'] = lib
    for k in list(env):
        if k.startswith('NUMAPAGE_'):
            del env[k]
    return env


def check(p, expected_out, what):
    ok = p.returncode == 0 and p.stdout == expected_out and p.stderr == ''
    if not ok:
        print('%s: exit %d, stdout %r (expected %r), stderr %r' % (what, p.returncode, p.stdout,
                                                                   expected_out, p.stderr[-2000:]))
    return ok


def fsize(lib, py):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, resource.RLIM_INFINITY))
    p = subprocess.run([py, '-c', CHILD_AND_PARENT], env=env_with(lib), preexec_fn=limit,
                       capture_output=True, text=True, timeout=120)
    return check(p, EXPECTED, 'under RLIMIT_FSIZE 0')


def few_left(p, what):
    """True when FORKS ran to its end under the library, said nothing on stderr, and left at
    most twice SWEEP_EVERY of its children's files (the sweep's phase aside)."""
    words = p.stdout.split()
    if p.returncode != 0 or len(words) != 4 or words[:3] != ['loaded', 'True', 'left'] or p.stderr:
        print('forks: exit %d, stdout %r, stderr %r' % (p.returncode, p.stdout, p.stderr[-2000:]))
        return False
    left = int(words[3])
    print('%s: their live files still there: %d' % (what, left))
    if left > 2 * SWEEP_EVERY:
        print('the files of children gone long ago were not swept (at most %d expected)' % (2 * SWEEP_EVERY))
        return False
    return True


def kill_all(procs):
    """Kills and reaps those of procs still running."""
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def namespace_tools(lib, what):
    """unshare's path and an environment whose NP_LIB is lib (LD_PRELOAD unset: for the
    program alone, not for mount or the shell); (None, None), said, where this machine cannot
    make what (it needs root and unshare)."""
    if os.geteuid() != 0:
        print('skipped: %s needs root' % what)
        return None, None
    unshare = shutil.which('unshare')
    if not unshare:
        print('skipped: no unshare')
        return None, None
    env = env_with(lib)
    del env['LD_PRELOAD']
    env['NP_LIB'] = lib
    return unshare, env


def private_shm(lib, py, args):
    """Runs py ARGS under LD_PRELOAD=lib with a private, full 2 MiB tmpfs on /dev/shm; None
    when this machine cannot make one (not root, no unshare, no mount namespace)."""
    unshare, env = namespace_tools(lib, 'a private /dev/shm')
    if not unshare:
        return None
    script = ('mount -t tmpfs -o size=2m tmpfs /dev/shm || exit 77\n'
              'head -c 2097152 /dev/zero > /dev/shm/filler 2>/dev/null\n'
              'head -c 4096 /dev/zero > /dev/shm/filler2 2>/dev/null\n'
              'exec env LD_PRELOAD="$NP_LIB" "$@"\n')
    p = subprocess.run([unshare, '-m', 'sh', '-c', script, 'sh', py] + args,
                       env=env, capture_output=True, text=True, timeout=120)
    if p.returncode == SKIP or (p.returncode != 0 and 'unshare' in p.stderr and p.stdout == ''):
        print('skipped: no private mount namespace here (%s)' % p.stderr.strip()[-200:])
        return None
    return p


def full_fork(lib, py):
    n = 200
    p = private_shm(lib, py, ['-c', FULL_FORKS, str(n)])
    if p is None:
        return SKIP
    return few_left(p, '%d children of a parent that could not publish left with _exit' % n)


def full(lib, py):
    p = private_shm(lib, py, ['-c', CHILD_AND_PARENT])
    if p is None:
        return SKIP
    return check(p, EXPECTED, 'with /dev/shm full')


def fork(lib, py):
    n = 300
    p = subprocess.run([py, '-c', FORKS, str(n)], env=env_with(lib), capture_output=True,
                       text=True, timeout=120)
    return few_left(p, '%d children left with _exit' % n)


def fork_quiet(lib, py):
    n = 20
    p = subprocess.run([py, '-c', QUIET, str(n)], env=env_with(lib), capture_output=True, text=True,
                       timeout=120)
    want = 'loaded True left 0 worker 1 file True\n'
    # (The worker's file stays, as any child's that leaves with _exit, until a sweep.)
    return check(p, want, '%d children that exec or leave at once, then one that works' % (2 * n))


def containers(lib, py):
    unshare, env = namespace_tools(lib, 'a pid namespace')
    if not unshare:
        return SKIP
    # exec: the program is pid 1 of its namespace; /proc is mounted anew so that it sees
    # its own namespace (/proc/self, /proc/self/ns/pid).
    script = 'exec env LD_PRELOAD="$NP_LIB" "$@"'
    procs, seen = [], []
    try:
        for _ in range(2):
            p = subprocess.Popen([unshare, '-pf', '--mount-proc', 'sh', '-c', script, 'sh', py, '-c', MAPPED],
                                 env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            procs.append(p)
            words = p.stdout.readline().split()
            if not words:
                err = p.communicate(timeout=30)[1]
                if 'unshare' in err:
                    print('skipped: no pid namespace here (%s)' % err.strip()[-200:])
                    return SKIP
                print('a container\'s program said nothing: %r' % err[-2000:])
                return False
            seen.append(words)
        print('in the containers: %s' % seen)
        if [w[0] for w in seen] != ['1', '1']:
            print('each program should be its namespace\'s pid 1')
            return False
        files = [w[1] for w in seen]
        if '-' in files or files[0] == files[1]:
            print('each process should map a live file of its own')
            return False
        for p in procs:
            out, err = p.communicate('exit\n', timeout=30)
            if p.returncode != 0 or err:
                print('exit %d, stderr %r' % (p.returncode, err[-2000:]))
                return False
        left = [f for f in files if os.path.exists(f)]
        if left:
            print('not removed at exit: %s' % left)
            return False
        return True
    finally:
        kill_all(procs)


def as_pid_1(lib, py, program):
    """Runs program under LD_PRELOAD=lib as pid 1 of a new pid namespace (its own /proc):
    the finished process, or SKIP where no pid namespace can be made here."""
    unshare, env = namespace_tools(lib, 'a pid namespace')
    if not unshare:
        return SKIP
    script = 'exec env LD_PRELOAD="$NP_LIB" "$@"'
    p = subprocess.run([unshare, '-pf', '--mount-proc', 'sh', '-c', script, 'sh', py, '-c', program],
                       env=env, capture_output=True, text=True, timeout=120)
    if p.returncode == SKIP or (p.returncode != 0 and 'unshare' in p.stderr and not p.stdout):
        print('skipped: no pid namespace here (%s)' % (p.stderr + p.stdout).strip()[-200:])
        return SKIP
    return p


def nested(lib, py):
    p = as_pid_1(lib, py, NESTED)
    if p is SKIP:
        return SKIP
    lines = [l.split() for l in p.stdout.splitlines()]
    print('child, parent: %s' % lines)
    if p.returncode != 0 or p.stderr or len(lines) != 2 or any(len(l) != 3 for l in lines):
        print('exit %d, stderr %r' % (p.returncode, p.stderr[-2000:]))
        return False
    uid = os.geteuid()
    for (pid, ns, f), who in zip(lines, ('child', 'parent')):
        want = '/dev/shm/numapage.%d.%s.%s' % (uid, pid, ns)
        if pid != '1' or f != want:
            print('the %s (pid %s of namespace %s) maps %s, not its own %s' % (who, pid, ns, f, want))
            return False
    return True


def nested_nohooks(lib, py):
    p = as_pid_1(lib, py, NESTED_NOHOOKS)
    if p is SKIP:
        return SKIP
    return check(p, 'sibling file before True after True\n',
                 'a child forked without fork handlers into a namespace of its own, sweeping')


def containers_noproc(lib, py):
    unshare, env = namespace_tools(lib, 'a pid namespace')
    if not unshare:
        return SKIP
    # /proc hidden, then the program, which says its pid and waits for a line on stdin: as the
    # namespace's pid 1 (exec), or as a child of the shell after two others (another pid).
    prog = 'import os, sys; x = bytearray(1 << 20); print("ready", os.getpid(), flush=True); sys.stdin.readline()'
    hide = 'mount -t tmpfs none /proc || exit 77; '
    as_one = hide + 'exec env LD_PRELOAD="$NP_LIB" "$@"'
    as_child = hide + 'sleep 0.1 & sleep 0.1 & env LD_PRELOAD="$NP_LIB" "$@"; :'
    procs = []

    def start(script):
        p = subprocess.Popen([unshare, '-pfm', 'sh', '-c', script, 'sh', py, '-c', prog], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(p)
        words = p.stdout.readline().split()
        if words[:1] != ['ready']:
            err = p.communicate(timeout=30)[1]
            return None if p.returncode == SKIP or 'unshare' in err else err
        return '/dev/shm/numapage.%d.%s.0' % (os.geteuid(), words[1])

    def inode(name):
        try:
            return os.stat(name).st_ino
        except FileNotFoundError:
            return None

    def stop(p):
        p.communicate('exit\n', timeout=30)
        return p.returncode == 0

    try:
        a = start(as_child)
        if a is None:
            print('skipped: no pid and mount namespace here')
            return SKIP
        if not a.startswith('/') or a.endswith('.1.0') or inode(a) is None:
            print('the first program did not publish as a pid other than 1 (%r)' % a)
            return False
        ia = inode(a)
        b = start(as_one)
        if b != '/dev/shm/numapage.%d.1.0' % os.geteuid() or inode(b) is None:
            print('the second program did not publish as pid 1 (%r)' % b)
            return False
        if inode(a) != ia:
            print('the second program\'s start removed the first one\'s live file %s' % a)
            return False
        ib = inode(b)
        c = start(as_one)
        if c != b:
            print('the third program did not start as pid 1 (%r)' % c)
            return False
        ic = inode(c)  # the name may have been taken: a file an exec left looks the same
        if not stop(procs[1]):
            return False
        if ic != ib and inode(c) != ic:
            print('the second program removed the third one\'s file at its exit')
            return False
        if not stop(procs[2]) or not stop(procs[0]):
            return False
        left = [f for f in (a, b) if inode(f) is not None]
        if left:
            print('left at exit: %s' % left)
            return False
        return True
    finally:
        kill_all(procs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--lib', required=True)
    ap.add_argument('scenario', choices=['fsize', 'full', 'fork', 'full_fork', 'fork_quiet', 'containers',
                                        'nested', 'nested_nohooks', 'containers_noproc'])
    a = ap.parse_args()
    py = shutil.which('python3') or sys.executable
    r = {'fsize': fsize, 'full': full, 'fork': fork, 'full_fork': full_fork,
         'fork_quiet': fork_quiet, 'containers': containers, 'nested': nested,
         'nested_nohooks': nested_nohooks,
         'containers_noproc': containers_noproc}[a.scenario](os.path.abspath(a.lib), py)
    if r is SKIP:
        return SKIP
    print('ok' if r else 'FAILED')
    return 0 if r else 1


if __name__ == '__main__':
    sys.exit(main())
