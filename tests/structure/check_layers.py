#!/usr/bin/env python3
"""
tests/structure/check_layers.py — src/README.md says which layer each file of src/ belongs to
and that only the OS layer makes system calls; this holds the code to it. For every .c and .h
under src/:
  - every #include "x" must name a file of a lower layer, of the same module, or the public
    include/numapage.h (system headers are not checked);
  - no two files may include each other, directly or around a circle;
  - no call of a system call wrapper (the names below) outside the OS layer, but for the
    exceptions src/README.md lists with their reasons.
Prints each violation; exit status 1 when there is one, 0 otherwise.
"""

import fnmatch
import os
import re
import sys

SYSCALLS = """
mmap munmap mremap madvise mincore mprotect mbind get_mempolicy set_mempolicy move_pages migrate_pages
sched_getcpu sched_yield sched_setaffinity sched_getaffinity syscall open openat creat read
write pread pwrite close stat fstat lstat fstatat unlink unlinkat ftruncate fchmod chmod kill
tgkill getpid gettid geteuid getuid prctl clone fork vfork waitpid wait4 nanosleep clock_gettime
sysconf getrandom getauxval setrlimit getrlimit access readlink dup dup2 pipe poll ioctl fcntl
brk sbrk fopen fdopen freopen opendir mkdir rmdir rename renameat2 link socket
""".split()
CALL = re.compile(r'(?<![\w.>])(' + '|'.join(SYSCALLS) + r')\s*\(')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def strip_comments(text):
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'), text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def parse_readme(path):
    layers, exceptions = [], {}
    section = None
    for line in open(path):
        if line.startswith('## '):
            section = line[3:].strip().lower()
        if not line.startswith('|') or line.startswith('| ---'):
            continue
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if section is None and len(cells) >= 3 and cells[0].isdigit():
            globs = re.findall(r'`([^`]+)`', cells[2])
            layers.append((int(cells[0]), cells[1], globs))
        elif section == 'exceptions' and len(cells) >= 2 and cells[0].startswith('`'):
            f = cells[0].strip('`')
            exceptions[f] = set(re.findall(r'`([^`]+)`', cells[1]))
    return layers, exceptions


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..'))
    src = os.path.join(root, 'src')
    layers, exceptions = parse_readme(os.path.join(src, 'README.md'))
    if not layers:
        print('not ok - src/README.md has no layer table')
        return 1

    def layer_of(rel):
        for num, module, globs in layers:
            if any(fnmatch.fnmatch(rel, g) for g in globs):
                return num, module
        return None

    files = []
    for d, _, names in os.walk(src):
        for n in names:
            if n.endswith(('.c', '.h')):
                files.append(os.path.relpath(os.path.join(d, n), src))
    problems = []
    graph = {}
    for rel in sorted(files):
        lm = layer_of(rel)
        if lm is None:
            problems.append('%s: in no layer of src/README.md' % rel)
            continue
        text = open(os.path.join(src, rel)).read()
        graph[rel] = set()
        for inc in INCLUDE.findall(text):
            if inc == 'numapage.h':
                continue
            # Quoted includes resolve against the file's folder, then src/ (meson's include dirs).
            cand = [os.path.normpath(os.path.join(os.path.dirname(rel), inc)), os.path.normpath(inc)]
            target = next((c for c in cand if os.path.exists(os.path.join(src, c))), None)
            if target is None:
                problems.append('%s: includes "%s", which is no file of src/' % (rel, inc))
                continue
            graph[rel].add(target)
            tm = layer_of(target)
            if tm is None:
                continue
            if tm[0] > lm[0]:
                problems.append('%s (layer %d %s) includes %s (layer %d %s): a higher layer' % (rel, lm[0], lm[1], target, tm[0], tm[1]))
            elif tm[0] == lm[0] and tm[1] != lm[1]:
                problems.append('%s includes %s: another module of the same layer' % (rel, target))
        if lm[1] != 'os':
            allowed = exceptions.get(rel, set())
            for lineno, line in enumerate(strip_comments(text).split('\n'), 1):
                for name in CALL.findall(line):
                    if name not in allowed:
                        problems.append('%s:%d: calls %s() outside the OS layer' % (rel, lineno, name))

    # Circles: a depth-first search over the include graph.
    color, stack = {}, []

    def visit(f):
        color[f] = 1
        stack.append(f)
        for g in sorted(graph.get(f, ())):
            if color.get(g) == 1:
                problems.append('include circle: ' + ' -> '.join(stack[stack.index(g):] + [g]))
            elif g not in color:
                visit(g)
        stack.pop()
        color[f] = 2

    for f in sorted(graph):
        if f not in color:
            visit(f)
    for p in problems:
        print('not ok - ' + p)
    if not problems:
        print('ok - %d files of src/: includes follow the layers, no circle, system calls in the OS layer only' % len(graph))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
