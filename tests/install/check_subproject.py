#!/usr/bin/env python3
"""libnumapage as a Meson subproject builds and installs the library only (suite 'install').

check_subproject.py EXAMPLE_DIR SOURCE_DIR

examples/subproject is copied to a temporary directory with SOURCE_DIR as its
subprojects/numapage, configured with the fallback forced, built whole (`ninja`, not just
its program) and installed into a DESTDIR stage. Then:
- no target of bench/ or of the test suite, and not the numapage command, was built;
- the stage holds the shared library, numapage.h, numapage.pc and the CMake package, and
  neither bin/numapage, nor a manual page, nor libnumapage.a.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

example, source = sys.argv[1:3]


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=280, **kw)
    if p.returncode != 0:
        sys.exit('FAILED (exit %d): %s\n%s%s' % (p.returncode, ' '.join(cmd), p.stdout, p.stderr))
    return p


tmp = tempfile.mkdtemp(prefix='numapage-subproject-install.')
try:
    proj = os.path.join(tmp, 'proj')
    shutil.copytree(example, proj)
    os.mkdir(os.path.join(proj, 'subprojects'))
    os.symlink(os.path.abspath(source), os.path.join(proj, 'subprojects', 'numapage'))
    build = os.path.join(tmp, 'build')
    env = {k: v for k, v in os.environ.items() if k not in ('CFLAGS', 'LDFLAGS', 'MESON_TESTTHREADS')}
    run(['meson', 'setup', '--force-fallback-for=numapage', '--prefix=/usr/local', build, proj], env=env)
    targets = json.loads(run(['meson', 'introspect', '--targets', build]).stdout)
    ours = [t for t in targets if t['subproject'] == 'numapage']
    names = sorted('%s (%s)' % (t['name'], t['type']) for t in ours)
    # The library has no program of its own: any executable or module is the command, a
    # benchmark or a test.
    unwanted = [n for n in names if not n.endswith(('(shared library)', '(static library)'))]
    if unwanted:
        sys.exit('FAILED: the subproject builds %s (all its targets: %s)' % (unwanted, names))
    print('subproject targets: ' + ', '.join(names))
    run(['ninja', '-C', build], env=env)
    stage = os.path.join(tmp, 'stage')
    run(['meson', 'install', '-C', build, '--no-rebuild', '--destdir', stage], env=env)
    files = sorted(os.path.relpath(os.path.join(d, f), stage) for d, _, fs in os.walk(stage) for f in fs)
    print('installed: ' + ', '.join(files))
    have = lambda end: any(f.endswith(end) for f in files)
    for want in ('libnumapage.so.0', 'include/numapage.h', 'pkgconfig/numapage.pc', 'cmake/numapage/numapageConfig.cmake'):
        if not have(want):
            sys.exit('FAILED: the subproject does not install %s' % want)
    for bad in ('bin/numapage', 'libnumapage.a', '.1', '.3', '.7'):
        if have(bad):
            sys.exit('FAILED: the subproject installs %s' % [f for f in files if f.endswith(bad)])
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print('ok')
