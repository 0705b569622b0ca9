#!/usr/bin/env python3
"""expect_crash.py REGEX FUZZER INPUT [FLAGS...] -- passes (exit 0) only when FUZZER, run once on
INPUT, fails and a line of its output matches REGEX: the open defect INPUT reproduces is still
there, and still the same one. Once the library is fixed it fails, saying what to do."""
import re
import subprocess
import sys


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    pattern, fuzzer, data = re.compile(sys.argv[1], re.M), sys.argv[2], sys.argv[3]
    cmd = [fuzzer] + sys.argv[4:] + [data]
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=240)
    out = r.stdout.decode(errors='replace')
    if r.returncode != 0 and pattern.search(out):
        print('%s still crashes as recorded (%r)' % (data, sys.argv[1]))
        return 0
    if r.returncode == 0:
        print('%s no longer crashes: the defect is fixed. Move the file to tests/fuzz/corpus/ (it guards\n'
              'the fix), drop it from fuzz_open_crashes and its FUZZ_AVOID_KNOWN_BUG_ name from\n'
              'fuzz_known_bugs (tests/fuzz/meson.build), and its line from crashes/README.md.' % data)
    else:
        print('%s fails, but not as recorded (%r): a different defect?' % (data, sys.argv[1]))
    print('--- output ---\n' + out[-6000:])
    return 1


if __name__ == '__main__':
    sys.exit(main())
