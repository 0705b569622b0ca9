#!/usr/bin/python3
"""An allocation-heavy, multi-threaded Python program for `numapage run --stats`.

Each worker thread builds and discards dictionaries, lists and strings (with
PYTHONMALLOC=malloc every object is a malloc call), hands some objects to the
next worker through a queue (so they are freed by another thread), and checks
its results. It prints a checksum that does not depend on the allocator.
"""
import hashlib
import os
import queue
import sys
import threading

# PYTHONMALLOC is read when the interpreter starts: set here, it would only reach children.
# So the program starts itself again with it, and every object is then a malloc call.
if os.environ.get("PYTHONMALLOC") != "malloc":
    os.environ["PYTHONMALLOC"] = "malloc"
    os.execv(sys.executable, [sys.executable] + sys.argv)
THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 4
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 40


def worker(idx, inbox, outbox, results):
    digest = hashlib.sha256()
    for r in range(ROUNDS):
        table = {f"k{idx}-{r}-{i}": [i] * (i % 17 + 1) for i in range(2000)}
        total = sum(len(v) for v in table.values())
        text = "".join(str(len(k)) for k in table)
        digest.update(f"{total}:{len(text)}".encode())
        outbox.put([bytes(i % 251 for i in range(n % 300)) for n in range(r, r + 50)])
        try:
            got = inbox.get(timeout=5)
        except queue.Empty:
            got = []
        digest.update(str(sum(len(b) for b in got)).encode())
        del table, text, got
    results[idx] = digest.hexdigest()


def main():
    queues = [queue.Queue() for _ in range(THREADS)]
    results = [None] * THREADS
    threads = [threading.Thread(target=worker,
                                args=(i, queues[i], queues[(i + 1) % THREADS], results))
               for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(results), "a worker failed"
    print("workload ok:", hashlib.sha256("".join(results).encode()).hexdigest()[:16])


if __name__ == "__main__":
    main()
