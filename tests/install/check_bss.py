#!/usr/bin/env python3
"""The library's small zero-initialised variables share a few pages (meson suite 'install').

check_bss.py LIBNUMAPAGE_SO

Every zero-initialised object of 4 KiB or more (tables sized for NP_MAX_NODES nodes or
NP_MAX_CPUS CPUs, buffers, the granule map) is declared NP_LARGE_BSS and so lies in the section
.sbss.np_large, which is NOBITS and after .bss; .bss itself, every small variable of the
library, is at most three pages. A large table left in .bss would put the small variables on either side of it on pages of their own,
and each page start-up touches is resident in every program (docs/perf-issue15.md section 15).

And .sbss.np_large stays under 10 MiB: untouched, it costs no memory, but it is address space
of every process, which RLIMIT_AS (`ulimit -v`) limits as it limits memory. The granule map is
8 MiB of it; the pools' free lists for 64 nodes of 64 shards were 8 MiB more (now mapped for
the nodes set up, 129 KiB each).
"""
import subprocess
import sys

so = sys.argv[1]
sections = {}  # name: (type, address, size)
for line in subprocess.run(['readelf', '-SW', so], capture_output=True, text=True, check=True).stdout.split('\n'):
    w = line.replace('[ ', '[').split()
    if len(w) > 5 and w[1] in ('.bss', '.sbss.np_large'):
        sections[w[1]] = (w[2], int(w[3], 16), int(w[5], 16))
errors = []
if '.bss' not in sections or '.sbss.np_large' not in sections:
    sys.exit('FAILED: %s has no .bss or no .sbss.np_large section (readelf -SW): %s' % (so, sorted(sections)))
large_type, large_start, large_size = sections['.sbss.np_large']
LARGE_MAX = 10 << 20
_, bss_start, bss_size = sections['.bss']
if large_type != 'NOBITS':
    errors.append('.sbss.np_large is %s, not NOBITS: zeros in the file' % large_type)
if large_start < bss_start:
    errors.append('.sbss.np_large lies before .bss')
if large_size > LARGE_MAX:
    errors.append('.sbss.np_large is %.1f MiB, more than %d MiB of every process\'s address space'
                  % (large_size / 2**20, LARGE_MAX >> 20))
if bss_size > 3 * 4096:
    errors.append('.bss is %d bytes, more than three pages' % bss_size)
large = 0
out = subprocess.run(['nm', '-S', '--defined-only', so], capture_output=True, text=True, check=True).stdout
for line in out.split('\n'):
    w = line.split()
    if len(w) != 4 or w[2] not in 'bB':
        continue
    addr, size, name = int(w[0], 16), int(w[1], 16), w[3]
    if size < 4096:
        continue
    large += 1
    if bss_start <= addr < bss_start + bss_size:
        errors.append('%s (%d bytes) is in .bss: declare it NP_LARGE_BSS' % (name, size))
if large < 5:
    errors.append('only %d objects of 4 KiB or more found: is %s stripped?' % (large, so))
if errors:
    sys.exit('FAILED:\n  ' + '\n  '.join(errors))
print('ok: .bss %d bytes; %d large objects in .sbss.np_large, %.1f MiB' % (bss_size, large, large_size / 2**20))
