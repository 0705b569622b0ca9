#!/usr/bin/env python3
"""The exported set of libnumapage.so is the one written down (meson suite 'install').

check_symbols.py LIBNUMAPAGE_SO NUMAPAGE_MAP NUMAPAGE_H

- the version script (src/numapage.map.in, as configured for this build) names every function
  of numapage.h, and no numa_page_* name that the header lacks;
- the library's defined dynamic symbols (nm -D) are exactly the script's names: nothing
  internal leaks (np_override_anchor_ used to), nothing listed is missing;
- they are unversioned, so the libc names interpose on glibc's versioned ones.
"""
import re
import subprocess
import sys

so, mapfile, header = sys.argv[1:4]
text = re.sub(r'/\*.*?\*/', ' ', open(mapfile).read(), flags=re.S)
glob = text.split('global:')[1].split('local:')[0]
listed = set(re.findall(r'([A-Za-z_]\w*)\s*;', glob))
code = re.sub(r'/\*.*?\*/', ' ', open(header).read(), flags=re.S)
api = set(re.findall(r'NUMA_PAGE_API\s+[^;{}()]*?\b(numa_page_\w+)\s*\(', code))
errors = []
if not api:
    sys.exit('FAILED: no functions found in ' + header)
for f in sorted(api - listed):
    errors.append('%s is in numapage.h but not in the version script' % f)
for f in sorted({n for n in listed if n.startswith('numa_page_')} - api):
    errors.append('%s is in the version script but not in numapage.h' % f)
out = subprocess.run(['nm', '-D', '--defined-only', so], capture_output=True, text=True, check=True).stdout
exported = {}
for line in out.split('\n'):
    w = line.split()
    if len(w) == 3 and w[1] in 'TtWDdBbRrVi':
        exported[w[2].split('@')[0]] = w[2]
for name in sorted(set(exported) - listed):
    errors.append('%s is exported but not written down in the version script' % name)
for name in sorted(listed - set(exported)):
    errors.append('%s is in the version script but %s does not define it' % (name, so))
for name, full in sorted(exported.items()):
    if '@' in full:
        errors.append('%s is versioned (%s): it would not interpose on the C library' % (name, full))
if errors:
    sys.exit('FAILED:\n  ' + '\n  '.join(errors))
print('%d symbols exported, as written down: %s' % (len(exported), ' '.join(sorted(exported))))
print('ok')
