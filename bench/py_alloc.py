#!/usr/bin/env python3
"""py_alloc.py - an allocation-heavy Python workload for the benchmark suite.

Run with PYTHONMALLOC=malloc so that every Python object comes from the C library's malloc (or
from the preloaded allocator under test). A fixed seed and a fixed amount of work: records as
dicts, tuples and strings, sorting, JSON round trips, set algebra, string building and
splitting, and a churn of short-lived lists. Every phase checks its result by a second,
independent computation and exits with status 1 on a mismatch.

    python3 py_alloc.py [--scale X]
"""
import json
import random
import sys


def fail(msg):
    print("py_alloc: CHECK FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


def records_phase(rng, n):
    recs = []
    for i in range(n):
        k = rng.randrange(1 << 30)
        recs.append({"id": i, "key": "k%09d" % k, "val": k % 1000003,
                     "tags": ("t%d" % (k % 7), "u%d" % (k % 13)), "blob": "x" * (k % 61)})
    total = sum(r["val"] for r in recs)
    recs.sort(key=lambda r: (r["key"], r["id"]))
    for a, b in zip(recs, recs[1:]):
        if (a["key"], a["id"]) > (b["key"], b["id"]):
            fail("records not sorted")
    # Group by tag with dicts of lists, then check the groups add up.
    groups = {}
    for r in recs:
        groups.setdefault(r["tags"][0], []).append(r["val"])
    if sum(sum(v) for v in groups.values()) != total:
        fail("grouped sums differ")
    if sum(len(v) for v in groups.values()) != n:
        fail("grouped counts differ")
    return total


def json_phase(rng, n):
    docs = [{"a": [rng.randrange(1000) for _ in range(rng.randrange(1, 20))],
             "s": "".join(chr(97 + rng.randrange(26)) for _ in range(rng.randrange(1, 40))),
             "n": {"x": rng.random(), "y": [None, True, i]}} for i in range(n)]
    text = json.dumps(docs)
    back = json.loads(text)
    if back != docs:
        fail("JSON round trip changed the documents")
    return len(text)


def set_phase(rng, n):
    a = {rng.randrange(4 * n) for _ in range(n)}
    b = {rng.randrange(4 * n) for _ in range(n)}
    inter, union = a & b, a | b
    if len(union) != len(a) + len(b) - len(inter):
        fail("set sizes do not add up")
    if any(x not in a or x not in b for x in inter):
        fail("intersection holds a foreign element")
    return len(union)


def string_phase(rng, n):
    words = ["w%d_%d" % (i, rng.randrange(100000)) for i in range(n)]
    text = " ".join(words)
    parts = text.split(" ")
    if parts != words:
        fail("split does not give the joined words back")
    counts = {}
    for w in parts:
        head = w[:3]
        counts[head] = counts.get(head, 0) + 1
    if sum(counts.values()) != n:
        fail("word counts differ")
    return len(text)


def churn_phase(rng, n):
    live = [None] * 512
    made = 0
    for _ in range(n):
        i = rng.randrange(len(live))
        live[i] = [rng.randrange(100) for _ in range(rng.randrange(1, 24))]
        made += len(live[i])
    kept = sum(len(x) for x in live if x is not None)
    if kept > made:
        fail("kept more than made")
    return made


def main():
    scale = 1.0
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--scale":
        scale = float(args[1])
    elif args:
        print("usage: py_alloc.py [--scale X]", file=sys.stderr)
        return 64
    rng = random.Random(42)
    n = max(1000, int(30000 * scale))
    results = []
    for _ in range(2):
        results.append(records_phase(rng, n))
        results.append(json_phase(rng, n // 4))
        results.append(set_phase(rng, n * 2))
        results.append(string_phase(rng, n * 2))
        results.append(churn_phase(rng, n * 2))
    print("py_alloc: ok checksum=%d" % (sum(results) % (1 << 61)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
