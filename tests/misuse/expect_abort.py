#!/usr/bin/env python3
"""expect_abort.py REGEX PROGRAM [ARGS...] — passes (exit 0) only when PROGRAM dies by SIGABRT
and a line of its stderr matches REGEX: the misuse was caught by the check meant to catch it,
not by a crash elsewhere (a segfault would also satisfy a plain should_fail test)."""
import re
import signal
import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    pattern, cmd = re.compile(sys.argv[1], re.M), sys.argv[2:]
    try:
        r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=50)
    except subprocess.TimeoutExpired:
        print('%s: timed out' % ' '.join(cmd))
        return 1
    err = r.stderr.decode(errors='replace')
    ok = True
    if r.returncode != -signal.SIGABRT:
        print('%s: exit status %d, expected death by SIGABRT' % (' '.join(cmd), r.returncode))
        ok = False
    if not pattern.search(err):
        print('%s: stderr does not match %r' % (' '.join(cmd), sys.argv[1]))
        ok = False
    if not ok:
        print('--- stderr ---\n' + err)
        return 1
    print(err.strip())
    return 0


if __name__ == '__main__':
    sys.exit(main())
