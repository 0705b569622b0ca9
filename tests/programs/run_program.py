#!/usr/bin/env python3
"""run_program.py --lib LIBNUMAPAGE [--exe PATH] SCENARIO — runs a real program twice, under
the C library's malloc and with LD_PRELOAD=LIBNUMAPAGE, and passes when both runs succeed with
the same output and the preloaded run's statistics (NUMAPAGE_STATS=json:FILE, written at exit)
show that libnumapage served its allocations. Exit 77 (skipped) when the program is missing.

Scenarios: python (PYTHONMALLOC=malloc, alloc_heavy.py), gcc (compiles a generated C file, runs
the result), sqlite3 (a generated workload), cpp (--exe: cpp_workload, which also checks its
own allocations with numa_page_node_of), ls, sort, bash (smoke runs)."""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


class Failure(Exception):
    pass


def need(prog):
    path = shutil.which(prog)
    if not path:
        print('%s not found: skipped' % prog)
        sys.exit(SKIP)
    return path


def run(cmd, env_extra, lib, stats, cwd, stdin=None, timeout=240):
    """Runs cmd with (lib) or without (None) the preload; returns (stdout, stderr, seconds)."""
    env = dict(os.environ)
    env.pop('LD_PRELOAD', None)
    env.pop('NUMAPAGE_STATS', None)
    env.update(env_extra)
    if lib:
        env['LD_PRELOAD'] = lib
        env['NUMAPAGE_STATS'] = 'json:' + stats
    t = time.monotonic()
    r = subprocess.run(cmd, cwd=cwd, env=env, input=stdin, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    dt = time.monotonic() - t
    label = 'libnumapage' if lib else 'glibc'
    if r.returncode != 0:
        raise Failure('%s under %s: exit status %d\n--- stderr ---\n%s' %
                      (' '.join(cmd), label, r.returncode, r.stderr.decode(errors='replace')[-4000:]))
    if lib and b'numapage:' in r.stderr:
        # The library reports misuse and failures as "numapage: ..." lines.
        raise Failure('%s under libnumapage printed:\n%s' % (' '.join(cmd), r.stderr.decode(errors='replace')[-4000:]))
    return r.stdout, r.stderr, dt


def stats_of(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise Failure('no statistics from the preloaded run (%s): was libnumapage loaded?' % e)
    total = {}
    for node in doc['nodes']:
        for k, v in node.items():
            if k != 'node':
                total[k] = total.get(k, 0) + v
    return total


def compare(name, cmd, lib, tmp, env=None, stdin=None, min_requested=1 << 20, outputs=()):
    """Both runs must print the same stdout (and write the same files `outputs`, relative to
    their own working directories); the preloaded one must have requested at least
    min_requested bytes through libnumapage's malloc."""
    results = []
    for label, l in (('glibc', None), ('numapage', lib)):
        cwd = os.path.join(tmp, label)
        os.makedirs(cwd, exist_ok=True)
        stats = os.path.join(tmp, name + '-stats.json')
        out, err, dt = run(cmd, env or {}, l, stats, cwd, stdin=stdin)
        files = {}
        for o in outputs:
            with open(os.path.join(cwd, o), 'rb') as f:
                files[o] = f.read()
        results.append((label, out, err, dt, files))
    (_, out_a, _, dt_a, files_a), (_, out_b, err_b, dt_b, files_b) = results
    if out_a != out_b:
        a, b = out_a.decode(errors='replace').splitlines(), out_b.decode(errors='replace').splitlines()
        diff = [(i, x, y) for i, (x, y) in enumerate(zip(a, b)) if x != y][:5]
        raise Failure('%s: output differs (glibc %d lines, libnumapage %d lines); first differences: %r' %
                      (name, len(a), len(b), diff))
    for o in outputs:
        if files_a[o] != files_b[o]:
            raise Failure('%s: %s differs between the two runs' % (name, o))
    st = stats_of(os.path.join(tmp, name + '-stats.json'))
    print('%s: same output (%d bytes); glibc %.2f s, libnumapage %.2f s; libnumapage served '
          'malloc_requested=%d bytes, pages_alloc=%d, chunks_mapped=%d, threads at exit=%d' %
          (name, len(out_a), dt_a, dt_b, st['malloc_requested'], st['pages_alloc'],
           st['chunks_mapped'], st['threads']))
    if st['malloc_requested'] < min_requested:
        raise Failure('%s: libnumapage served only %d bytes (want >= %d): were the allocations ours?' %
                      (name, st['malloc_requested'], min_requested))
    if st['chunks_mapped'] < 1 or st['pages_alloc'] < 1:
        raise Failure('%s: libnumapage mapped no memory' % name)
    if st['threads'] < 1:
        raise Failure('%s: no live thread counted at exit (the report runs on the main thread)' % name)
    return out_b, err_b, st


def scenario_python(args, tmp):
    py = need('python3')
    compare('python', [py, os.path.join(HERE, 'alloc_heavy.py')], args.lib, tmp,
            env={'PYTHONMALLOC': 'malloc', 'PYTHONHASHSEED': '0'}, min_requested=100 << 20)


def generate_c(path, seed=7):
    """A C file of a few hundred functions (structs, switch, loops, string tables): work for
    every pass of the compiler; its program prints a checksum."""
    rng = random.Random(seed)
    lines = ['#include <stdio.h>', '#include <string.h>', '#include <stdlib.h>', '']
    nfun = 250
    for i in range(nfun):
        fields = rng.randrange(2, 8)
        lines.append('struct s%d { %s };' % (i, ' '.join('long f%d;' % j for j in range(fields))))
        lines.append('static const char *names%d[] = { %s };' %
                     (i, ', '.join('"n%d_%d_%s"' % (i, j, 'x' * rng.randrange(10)) for j in range(6))))
        body = ['static long fn%d(long x) {' % i, '  struct s%d v; memset(&v, 0, sizeof v);' % i,
                '  long acc = %d;' % rng.randrange(1000)]
        for j in range(fields):
            body.append('  v.f%d = x * %d + %d;' % (j, rng.randrange(1, 50), rng.randrange(100)))
        body.append('  for (int k = 0; k < %d; k++) {' % rng.randrange(3, 30))
        body.append('    switch ((x + k) %% %d) {' % 5)
        for c in range(5):
            body.append('    case %d: acc += v.f%d * k + (long)strlen(names%d[%d]); break;' %
                        (c, rng.randrange(fields), i, rng.randrange(6)))
        body.append('    }')
        body.append('  }')
        if i > 0:
            body.append('  if (x > 0) acc ^= fn%d(x - 1) & 0xffff;' % rng.randrange(i))
        body.append('  return acc;')
        body.append('}')
        lines.extend(body)
    lines.append('int main(void) {')
    lines.append('  unsigned long sum = 0;')
    for i in range(0, nfun, 7):
        lines.append('  sum = sum * 31 + (unsigned long)fn%d(%d);' % (i, i % 5))
    lines.append('  printf("checksum %lu\\n", sum);')
    lines.append('  return 0;')
    lines.append('}')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


def scenario_gcc(args, tmp):
    gcc = need('gcc')
    src = os.path.join(tmp, 'generated.c')
    generate_c(src)
    # The whole driver (cpp, cc1, as; the statistics file is the last process's, the
    # driver's) to an object compared byte for byte; then cc1 alone, whose statistics show
    # that the compiler proper allocated through libnumapage.
    compare('gcc-object', [gcc, '-O2', '-g0', '-c', src, '-o', 'generated.o'], args.lib, tmp,
            min_requested=16 << 10, outputs=('generated.o',))
    cc1 = subprocess.run([gcc, '-print-prog-name=cc1'], stdout=subprocess.PIPE, check=True).stdout.decode().strip()
    if not os.path.isabs(cc1):
        raise Failure('gcc does not name its cc1: %r' % cc1)
    pre = os.path.join(tmp, 'generated.i')
    subprocess.run([gcc, '-E', src, '-o', pre], check=True)
    compare('cc1', [cc1, '-quiet', '-fpreprocessed', '-O2', pre, '-o', 'generated.s'], args.lib, tmp,
            min_requested=8 << 20, outputs=('generated.s',))
    compare('gcc-link', [gcc, '-O1', src, '-o', 'generated'], args.lib, tmp, min_requested=16 << 10)
    outs = []
    for label in ('glibc', 'numapage'):
        r = subprocess.run([os.path.join(tmp, label, 'generated')], stdout=subprocess.PIPE, timeout=60)
        if r.returncode != 0:
            raise Failure('the program gcc built under %s failed: %d' % (label, r.returncode))
        outs.append(r.stdout)
    if outs[0] != outs[1] or not outs[0].startswith(b'checksum '):
        raise Failure('programs built under glibc and libnumapage print %r and %r' % tuple(outs))
    print('gcc: both builds print %s' % outs[0].decode().strip())


def generate_sql(seed=11):
    """Tables, indexes, 30,000+ rows from recursive CTEs, joins, grouping, window functions,
    string functions, updates and deletes; every query ordered so the output is deterministic."""
    rng = random.Random(seed)
    q = ['PRAGMA cache_size = -20000;',
         'CREATE TABLE person(id INTEGER PRIMARY KEY, name TEXT, city INTEGER, score REAL, note TEXT);',
         'CREATE TABLE city(id INTEGER PRIMARY KEY, name TEXT);',
         'CREATE TABLE visit(pid INTEGER, cid INTEGER, day INTEGER, amount INTEGER);',
         "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200) "
         "INSERT INTO city SELECT x, 'city-' || x || substr('abcdefghij', x % 10 + 1) FROM c;",
         "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 30000) "
         "INSERT INTO person SELECT x, 'p' || x || '-' || hex(x * 7919), (x * 37) % 200 + 1, "
         "(x * 7919 % 10007) / 100.0, printf('%.*c', x % 50, 'n') FROM c;",
         "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 60000) "
         "INSERT INTO visit SELECT (x * 104729) % 30000 + 1, (x * 31) % 200 + 1, x % 365, (x * 13) % 1000 FROM c;",
         'CREATE INDEX visit_pid ON visit(pid);', 'CREATE INDEX person_city ON person(city, score);',
         'SELECT count(*), sum(length(name)), sum(length(note)) FROM person;',
         'SELECT c.name, count(*), round(avg(p.score), 3) FROM person p JOIN city c ON c.id = p.city '
         'GROUP BY c.id ORDER BY count(*) DESC, c.id LIMIT 20;',
         'SELECT p.id, p.name, sum(v.amount) AS total FROM person p JOIN visit v ON v.pid = p.id '
         'GROUP BY p.id ORDER BY total DESC, p.id LIMIT 25;',
         'SELECT day, count(*), sum(amount), group_concat(DISTINCT cid % 10) FROM visit '
         'GROUP BY day ORDER BY day LIMIT 40;',
         'SELECT id, score, rank() OVER (PARTITION BY city ORDER BY score DESC, id) AS r FROM person '
         'WHERE city <= 3 ORDER BY city, r LIMIT 60;',
         'SELECT upper(substr(name, 1, 6)), replace(note, \'n\', \'m\') FROM person WHERE id % 997 = 0 ORDER BY id;']
    for _ in range(40):
        lo = rng.randrange(1, 29000)
        q.append('UPDATE person SET score = score * 1.01, note = note || \'u\' WHERE id BETWEEN %d AND %d;' %
                 (lo, lo + rng.randrange(10, 400)))
        q.append('DELETE FROM visit WHERE pid = %d;' % rng.randrange(1, 30000))
    q += ['SELECT count(*), round(sum(score), 2), sum(length(note)) FROM person;',
          'SELECT count(*), sum(amount) FROM visit;',
          'CREATE TABLE blobs(id INTEGER PRIMARY KEY, b BLOB);',
          "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000) "
          "INSERT INTO blobs SELECT x, CAST(printf('%0*d', x % 700, x) AS BLOB) FROM c;",
          "WITH RECURSIVE c(x) AS (SELECT 2001 UNION ALL SELECT x + 1 FROM c WHERE x < 3000) "
          "INSERT INTO blobs SELECT x, zeroblob(x * 37 % 9000) FROM c;",
          'SELECT count(*), sum(length(b)), hex(substr(b, 1, 4)) FROM blobs GROUP BY id > 2000 ORDER BY 1;',
          'SELECT group_concat(name, \',\') FROM (SELECT name FROM city ORDER BY name DESC LIMIT 30);',
          'VACUUM;',
          'SELECT count(*) FROM person p WHERE EXISTS (SELECT 1 FROM visit v WHERE v.pid = p.id AND v.amount > 990);']
    return '\n'.join(q) + '\n'


def scenario_sqlite3(args, tmp):
    sqlite = need('sqlite3')
    sql = generate_sql().encode()
    # An on-disk database (page cache, journal) in each run's own directory.
    compare('sqlite3', [sqlite, '-batch', 'work.db'], args.lib, tmp, stdin=sql, min_requested=8 << 20)


def scenario_cpp(args, tmp):
    if not args.exe:
        print('no C++ compiler at build time: skipped')
        sys.exit(SKIP)
    out, err, st = compare('cpp', [args.exe], args.lib, tmp, min_requested=16 << 20)
    line = [l for l in err.decode(errors='replace').splitlines() if l.startswith('numapage-check:')]
    if not line:
        raise Failure('cpp: no numapage-check line on stderr')
    words = line[0].split()
    # "numapage-check: K of N sampled allocations are libnumapage's"
    if len(words) < 4 or words[2] != 'of' or words[1] != words[3] or int(words[3]) < 1000:
        raise Failure('cpp: %s' % line[0])
    print('cpp: %s' % line[0])


def scenario_ls(args, tmp):
    ls = need('ls')
    compare('ls', [ls, '-la', '--time-style=+%s', '/usr/bin', '/usr/lib'], args.lib, tmp, min_requested=1 << 10)


def scenario_sort(args, tmp):
    sort = need('sort')
    rng = random.Random(3)
    data = ''.join('%08x %s %d\n' % (rng.randrange(1 << 32), 'w' * rng.randrange(40), rng.randrange(10 ** 6))
                   for _ in range(200000)).encode()
    # Several threads and a small buffer: merges and temporary files.
    compare('sort', [sort, '--parallel=4', '-S', '8M', '-k2,2', '-k1,1'], args.lib, tmp, stdin=data,
            env={'LC_ALL': 'C', 'TMPDIR': tmp}, min_requested=4 << 20)


BASH_SCRIPT = r'''
declare -A assoc
arr=()
for i in $(seq 1 3000); do
  arr+=("item$i-$((i * i % 97))")
  assoc["k$((i % 500))"]+="$i,"
done
s=""
for x in "${arr[@]:100:200}"; do s+="${x^^}"; done
echo "len ${#arr[@]} ${#s} ${#assoc[@]}"
echo "$(printf '%s\n' "${arr[@]}" | sort -t- -k2n | tail -3 | tr '\n' ' ')"
out=$( for k in "${!assoc[@]}"; do echo "$k ${#assoc[$k]}"; done | sort | head -5 )
echo "$out"
f() { local v="$1"; [ "$v" -le 0 ] && echo 0 && return; echo $(( v + $(f $((v - 1))) )); }
echo "f $(f 60)"
text=$(yes 'some words to cut' | head -2000 | cut -d' ' -f2,4 | sort | uniq -c)
echo "$text"
'''


def scenario_bash(args, tmp):
    bash = need('bash')
    compare('bash', [bash, '-c', BASH_SCRIPT], args.lib, tmp, env={'LC_ALL': 'C'}, min_requested=1 << 20)


SCENARIOS = {
    'python': scenario_python,
    'gcc': scenario_gcc,
    'sqlite3': scenario_sqlite3,
    'cpp': scenario_cpp,
    'ls': scenario_ls,
    'sort': scenario_sort,
    'bash': scenario_bash,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lib', required=True, help='libnumapage.so to preload')
    ap.add_argument('--exe', help='the program of the cpp scenario')
    ap.add_argument('scenario', choices=sorted(SCENARIOS))
    args = ap.parse_args()
    args.lib = os.path.abspath(args.lib)
    if args.exe:
        args.exe = os.path.abspath(args.exe)
    if not os.path.exists(args.lib):
        print('%s: no such library' % args.lib)
        return 1
    with tempfile.TemporaryDirectory(prefix='np-programs-') as tmp:
        try:
            SCENARIOS[args.scenario](args, tmp)
        except Failure as e:
            print('FAIL: %s' % e)
            return 1
        except subprocess.TimeoutExpired as e:
            print('FAIL: timed out: %s' % e)
            return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
