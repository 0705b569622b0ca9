#!/usr/bin/env python3
"""gen_corpus.py [DIR] -- writes the seed corpus of fuzz_api (default: corpus/ beside this file).

Each seed is a small program in fuzz_api's input encoding (fuzz_input.h, the opcode list in
fuzz_api.c: keep the three in step) that exercises one group of calls, so the fuzzer starts
from inputs that already reach every operation and every size range instead of finding the
encoding byte by byte. Deterministic: running it again writes the same bytes. No seed may
trigger a known open defect (crashes/README.md): the corpus replay test must pass."""
import os
import random
import struct
import sys

OPS = ['MALLOC', 'CALLOC', 'REALLOC', 'REALLOCARRAY', 'POSIX_MEMALIGN', 'ALIGNED_ALLOC',
       'MEMALIGN', 'USABLE', 'FREE', 'PAGES', 'PAGES_ONNODE', 'INTERLEAVED', 'NODE_OF',
       'TRIM', 'STATS', 'HOME', 'HANDOFF', 'SYNC', 'WORKER_MALLOC', 'WORKER_REALLOC',
       'WORKER_HOME', 'THREAD_EXIT', 'BULK_ALLOC', 'BULK_FREE', 'EDGE', 'PROBE', 'ZERO_HEAD']
OP = {name: i for i, name in enumerate(OPS)}
KiB, MiB = 1 << 10, 1 << 20


def op(name, *args):
    out = bytes([OP[name]])
    for a in args:
        out += a if isinstance(a, bytes) else bytes([a])
    return out


# Sizes (np_fz_size): a selector byte, then what its range reads.
def tiny(n):
    assert 0 <= n <= 64
    return bytes([0, n])


def cls(c, d=0):
    return bytes([1, c, d + 1])


def small(n):
    assert 1 <= n <= 32 * KiB
    return bytes([2]) + struct.pack('<H', n - 1)


def pages(p, d=0):
    return bytes([3, p - 1, d + 1])


def run(n):
    assert 64 * KiB <= n < 4 * MiB
    return bytes([4]) + struct.pack('<I', n - 64 * KiB)


def near_chunk(delta):
    assert -64 * KiB <= delta <= 64 * KiB and delta % 2 == 0
    return bytes([5]) + struct.pack('<H', (delta + 64 * KiB) // 2)


def huge(kib_over_4mib):
    return bytes([6]) + struct.pack('<H', kib_over_4mib)


def pow2(k, d=0):
    return bytes([7, k, d + 1])


def impossible(i):
    return bytes([8, i])


# Alignments (np_fz_align): 2^k for k <= 30 and k in (32, 36, 40), or one of the bad ones.
ALIGN_EXPONENTS = list(range(31)) + [32, 36, 40]


def align(k):
    assert k in ALIGN_EXPONENTS
    return bytes([k if k <= 30 else 31 + (k - 32) // 4])


def bad_align(i):
    assert 0 <= i <= 8
    return bytes([34 + i])


# Counts (np_fz_count).
def count_small(n):
    return bytes([0, n])


def count_pow2(k):
    return bytes([2, k])


def count_max_shift(k):
    return bytes([3, k])


# Nodes (np_fz_node): a node by rank, or bad id i (0: -1, ... 7: the first missing id).
def node(rank):
    return bytes([rank])


def bad_node(i):
    return bytes([192 + i])


def seeds():
    s = {}
    s['classes'] = b''.join(op('MALLOC', c, cls(c, d)) for c in range(40) for d in (-1, 0, 1)) + \
        b''.join(op('FREE', c) for c in range(40))
    s['tiny'] = b''.join(op('MALLOC', n, tiny(n)) for n in range(65)) + \
        b''.join(op('USABLE', n) + op('FREE', n) for n in range(0, 65, 3))
    s['ranges'] = b''.join(op('MALLOC', i, sz) + op('USABLE', i) + op('NODE_OF', i, b'\xff\xff')
                           for i, sz in enumerate([tiny(0), cls(39), small(20000), pages(1), pages(16),
                                                   pages(9, 1), run(100 * KiB), run(4 * MiB - 65 * KiB),
                                                   near_chunk(0), near_chunk(-4096), near_chunk(8192),
                                                   huge(1), huge(12000), pow2(20, 1), pow2(26)]))
    s['impossible'] = b''.join(op('MALLOC', 1, impossible(i)) + op('CALLOC', 2, count_small(1), impossible(i)) +
                               op('PAGES', 3, impossible(i)) + op('INTERLEAVED', 4, impossible(i)) +
                               op('PAGES_ONNODE', 5, impossible(i), node(0)) for i in range(7))
    s['calloc'] = op('CALLOC', 0, count_small(0), small(100)) + op('CALLOC', 1, count_small(10), cls(20)) + \
        op('CALLOC', 2, count_small(200), pages(4)) + op('CALLOC', 3, count_pow2(63), tiny(2)) + \
        op('CALLOC', 4, count_max_shift(0), tiny(2)) + op('CALLOC', 5, count_small(1), huge(100)) + \
        op('FREE', 5) + op('CALLOC', 5, count_small(1), huge(100)) + op('FREE', 1) + \
        op('CALLOC', 1, count_small(10), cls(20))
    grow = [tiny(1), cls(5), cls(30), small(32 * KiB), pages(2), pages(16), run(200 * KiB), run(3 * MiB),
            huge(10), huge(3000), huge(1000), run(80 * KiB), cls(3), tiny(0)]
    s['realloc'] = op('REALLOC', 7, tiny(10)) + b''.join(op('REALLOC', 7, sz) + op('USABLE', 7) for sz in grow) + \
        op('REALLOC', 8, small(500)) + op('REALLOC', 8, impossible(3)) + op('REALLOC', 8, tiny(0))
    s['reallocarray'] = op('MALLOC', 9, small(64)) + op('REALLOCARRAY', 9, count_small(3), small(100)) + \
        op('REALLOCARRAY', 9, count_pow2(40), pow2(20)) + op('REALLOCARRAY', 9, count_max_shift(1), tiny(3)) + \
        op('REALLOCARRAY', 9, count_small(20), pages(8)) + op('REALLOCARRAY', 9, count_small(0), tiny(5))
    for call in ('POSIX_MEMALIGN', 'ALIGNED_ALLOC', 'MEMALIGN'):
        prog = b''
        for j, k in enumerate(ALIGN_EXPONENTS):
            prog += op(call, j, align(k), tiny(1)) + op(call, 40 + j % 10, align(k), small(3000 + k))
        for i in range(9):
            prog += op(call, 20 + i, bad_align(i), small(100))
            if not (call == 'MEMALIGN' and i == 5):  # rounds up to 2 MiB: the open ALIGNED_ZERO defect
                prog += op(call, 30 + i, bad_align(i), tiny(0))
        s[call.lower()] = prog + op('TRIM')
    s['aligned_zero_small'] = b''.join(op('MEMALIGN', k, align(k), tiny(0)) for k in range(21))
    s['pages'] = op('PAGES', 0, tiny(0)) + op('PAGES', 1, pages(3)) + op('PAGES', 2, run(1 * MiB)) + \
        op('PAGES', 3, huge(20)) + b''.join(op('PAGES_ONNODE', 10 + r, pages(2), node(r)) for r in range(8)) + \
        b''.join(op('PAGES_ONNODE', 20 + i, pages(1), bad_node(i)) for i in range(8)) + \
        op('INTERLEAVED', 30, tiny(1)) + op('INTERLEAVED', 31, huge(8000)) + \
        b''.join(op('NODE_OF', 31, struct.pack('<H', x)) for x in (0, 1000, 30000, 65535)) + \
        b''.join(op('PROBE', s_, how, b'\x10\x00\x00\x80', 3) for s_ in (0, 2, 3, 31) for how in range(4)) + \
        op('FREE', 31) + op('TRIM')
    s['home'] = b''.join(op('HOME', node(r)) + op('PAGES', r, pages(1 + r)) + op('MALLOC', 10 + r, small(700)) +
                         op('PAGES', 20 + r, run(300 * KiB)) for r in range(4)) + \
        op('HOME', bad_node(0)) + op('HOME', bad_node(3)) + op('HOME', bad_node(7)) + op('PAGES', 40, tiny(5))
    s['remote'] = b''.join(op('MALLOC', i, cls(i % 40)) for i in range(32)) + \
        b''.join(op('HANDOFF', i) for i in range(0, 32, 2)) + op('SYNC') + \
        b''.join(op('WORKER_MALLOC', 32 + i, cls(i % 40)) for i in range(16)) + \
        b''.join(op('FREE', 32 + i) for i in range(0, 16, 2)) + \
        op('WORKER_REALLOC', 33, pages(5)) + op('WORKER_REALLOC', 35, tiny(4)) + op('WORKER_REALLOC', 1, huge(4)) + \
        op('WORKER_HOME', node(1)) + op('WORKER_MALLOC', 50, small(5000)) + op('HANDOFF', 50) + \
        op('WORKER_HOME', bad_node(4)) + op('PAGES', 51, pages(3)) + op('HANDOFF', 51) + \
        op('INTERLEAVED', 52, pages(7)) + op('HANDOFF', 52) + op('WORKER_HOME', bad_node(0)) + op('SYNC')
    s['thread_exit'] = op('THREAD_EXIT', 7, node(0), 0, *[cls(c) for c in (0, 5, 10, 15, 20, 25, 30, 39)]) + \
        op('THREAD_EXIT', 3, node(2), 8, cls(3), pages(2), huge(1), run(70 * KiB)) + \
        op('THREAD_EXIT', 1, bad_node(2), 16, tiny(9), small(9999)) + \
        b''.join(op('MALLOC', 20 + c, cls(c * 5)) for c in range(8)) + \
        b''.join(op('FREE', i) for i in range(12)) + op('TRIM')
    s['bulk'] = op('BULK_ALLOC', 255, cls(0), 0) + op('BULK_ALLOC', 63, cls(39), 1) + op('BULK_FREE', 2) + \
        op('BULK_ALLOC', 200, cls(20), 0) + op('BULK_FREE', 5) + op('BULK_FREE', 3) + \
        op('BULK_ALLOC', 100, tiny(0), 1) + op('BULK_FREE', 4) + op('BULK_FREE', 0) + \
        op('BULK_ALLOC', 80, cls(30), 0) + op('HANDOFF', 0) + op('BULK_FREE', 1) + op('TRIM')
    s['bulk_float'] = op('BULK_ALLOC', 255, cls(0), 0) + op('BULK_ALLOC', 64, cls(0), 0) + \
        op('BULK_FREE', 2) + op('SYNC') + op('BULK_ALLOC', 255, cls(0), 0) + op('BULK_FREE', 0)
    s['stats_edge'] = b''.join(op('EDGE', i) for i in range(8)) + \
        b''.join(op('STATS', node(r), how) for r in range(4) for how in range(3)) + \
        b''.join(op('STATS', bad_node(i), how) for i in range(8) for how in range(3)) + op('TRIM') + \
        op('MALLOC', 0, huge(50)) + op('FREE', 0) + op('TRIM') + op('STATS', node(0), 0)
    s['huge_cycle'] = b''.join(op('MALLOC', 0, huge(k)) + op('FREE', 0) for k in (1, 2, 1000, 900, 5000, 4)) + \
        op('MALLOC', 1, huge(100)) + op('REALLOC', 1, huge(4000)) + op('REALLOC', 1, huge(30000)) + \
        op('REALLOC', 1, huge(200)) + op('USABLE', 1) + op('TRIM')
    s['zero_head'] = b''.join(op('MALLOC', i, cls(i)) + op('ZERO_HEAD', i) for i in range(40)) + \
        b''.join(op('FREE', i) for i in range(0, 40, 2)) + op('REALLOC', 1, cls(30)) + op('REALLOC', 3, tiny(4)) + \
        op('REALLOC', 3, small(900)) + op('HANDOFF', 5) + op('WORKER_REALLOC', 7, pages(2)) + \
        op('MALLOC', 50, pages(3)) + op('ZERO_HEAD', 50) + op('MALLOC', 51, huge(3)) + op('ZERO_HEAD', 51)
    rng = random.Random(1303)
    for k in range(2):
        prog = b''
        while len(prog) < 400:
            name = rng.choice(OPS)
            prog += bytes([OP[name]]) + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 6)))
        s['mixed%d' % k] = prog
    return s


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, 'corpus')
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(seeds().items()):
        with open(os.path.join(out, name), 'wb') as f:
            f.write(data)
    print('%s: %d seeds' % (out, len(seeds())))


if __name__ == '__main__':
    main()
