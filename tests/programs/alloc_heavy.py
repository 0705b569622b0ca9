"""alloc_heavy.py — an allocation-heavy Python workload with deterministic output, run under
PYTHONMALLOC=malloc so that every Python object is a malloc block: dicts and lists that grow
and shrink (realloc), many short strings, big integers, sorting, JSON round trips, a
generator pipeline, and threads that build structures another thread drops. Prints digests
only, so the output of two runs (with and without libnumapage) can be compared byte for byte."""
import hashlib
import json
import random
import threading


def digest(obj):
    return hashlib.sha256(repr(obj).encode()).hexdigest()[:16]


def dicts_and_lists(rng):
    table = {}
    for i in range(120000):
        k = 'k%d' % rng.randrange(50000)
        table.setdefault(k, []).append(i)
        if i % 7 == 0 and table:
            table.pop('k%d' % rng.randrange(50000), None)
    sizes = sorted(len(v) for v in table.values())
    return len(table), sum(sizes), sizes[-10:]


def strings(rng):
    words = [''.join(rng.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(rng.randrange(1, 30)))
             for _ in range(40000)]
    text = ' '.join(words)
    parts = text.split(' ')
    joined = '-'.join(reversed(parts)).upper()
    counts = {}
    for w in parts:
        counts[w[:3]] = counts.get(w[:3], 0) + 1
    return len(joined), digest(sorted(counts.items())[:50])


def big_integers():
    f = 1
    for i in range(1, 3000):
        f *= i
    fib = [0, 1]
    for _ in range(2000):
        fib.append(fib[-1] + fib[-2])
    # hex: decimal conversion of numbers this long is capped in recent Pythons
    return f.bit_length(), hex(f)[-20:], hex(fib[-1])[-20:], len(hex(fib[-1]))


def json_round_trip(rng):
    doc = [{'id': i, 'name': 'item%d' % i, 'tags': ['t%d' % rng.randrange(100) for _ in range(5)],
            'nested': {'v': rng.random(), 'w': list(range(i % 20))}} for i in range(12000)]
    text = json.dumps(doc, sort_keys=True)
    back = json.loads(text)
    return len(text), digest(back[::997])


def pipeline():
    gen = (x * x for x in range(200000))
    evens = [x for x in gen if x % 2 == 0]
    squares = {x % 1000: x for x in evens}
    tuples = sorted(((v, k) for k, v in squares.items()), reverse=True)
    return len(evens), tuples[:3]


def threads(rng):
    seeds = [rng.randrange(1 << 30) for _ in range(4)]
    built = [None] * 4

    def build(i):
        r = random.Random(seeds[i])
        built[i] = {r.randrange(10 ** 6): [r.random() for _ in range(8)] for _ in range(10000)}

    ts = [threading.Thread(target=build, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    # The main thread drops what the workers built: cross-thread frees.
    total = sum(len(d) for d in built)
    keys = sorted(k for d in built for k in list(d)[:5])
    built.clear()
    return total, keys[:8]


def main():
    rng = random.Random(20240611)
    for name, fn in (('dicts_and_lists', lambda: dicts_and_lists(rng)), ('strings', lambda: strings(rng)),
                     ('big_integers', big_integers), ('json', lambda: json_round_trip(rng)),
                     ('pipeline', pipeline), ('threads', lambda: threads(rng))):
        print(name, fn())


if __name__ == '__main__':
    main()
