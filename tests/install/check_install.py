#!/usr/bin/env python3
"""Installs this build into a temporary DESTDIR stage and uses it as another project would.

check_install.py BUILD_DIR CONSUMER_C CC [CXX] [CMAKE]

1. `meson install --destdir STAGE` from BUILD_DIR (no rebuild: meson test built it already).
2. Every file the issue names is in the stage: libnumapage.so.<version> with its soname and
   development links, libnumapage.a, include/numapage.h, numapage.pc, bin/numapage, and the man
   pages numapage.1, numapage.3 (with a link per function), numapage.7.
3. consumer.c is compiled with `pkg-config --cflags --libs numapage` found in the stage only
   (PKG_CONFIG_PATH into the stage, PKG_CONFIG_SYSROOT_DIR = the stage, since a DESTDIR stage
   keeps the final prefix in the .pc file), with the C compiler and, when there is one, as C++;
   then linked statically against libnumapage.a (`pkg-config --static`). Each one runs with
   LD_LIBRARY_PATH into the stage and must report that its mallocs went through libnumapage, and
   the shared ones that the library they loaded is the staged one.
4. The staged `numapage run --stats` runs the consumer and prints the per-node table.
5. With cmake: cmake_consumer/ (a CMake project, find_package(numapage CONFIG)) is configured
   with CMAKE_PREFIX_PATH = the staged prefix, built with the shared and the static targets,
   and run (its library must be the staged one); then configured against the build tree
   (numapage_DIR = BUILD_DIR/cmake), where it must load the build tree's library.
Nothing is read from the source tree but consumer.c and cmake_consumer/ themselves.
"""
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

build, consumer, cc = sys.argv[1], sys.argv[2], sys.argv[3]
cxx = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] else None
cmake = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None


def run(cmd, env=None, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    if check and p.returncode != 0:
        sys.exit('FAILED (exit %d): %s\n%s%s' % (p.returncode, ' '.join(map(shlex.quote, cmd)),
                                                 p.stdout, p.stderr))
    return p


opts = {o['name']: o['value']
        for o in json.loads(run(['meson', 'introspect', '--buildoptions', build]).stdout)}
if opts.get('b_sanitize', 'none') != 'none' or not opts.get('override', True):
    print('SKIP: the malloc override is off in this build (sanitizer or -Doverride=false)')
    sys.exit(77)
version = json.loads(run(['meson', 'introspect', '--projectinfo', build]).stdout)['version']

tmp = tempfile.mkdtemp(prefix='numapage-install.')
try:
    stage = os.path.join(tmp, 'stage')
    run(['meson', 'install', '-C', build, '--no-rebuild', '--destdir', stage])
    prefix = stage + opts['prefix']
    libdir = os.path.join(prefix, opts['libdir'])
    want = {
        'shared library': os.path.join(libdir, 'libnumapage.so.' + version),
        'soname link': os.path.join(libdir, 'libnumapage.so.' + version.split('.')[0]),
        'development link': os.path.join(libdir, 'libnumapage.so'),
        'static library': os.path.join(libdir, 'libnumapage.a'),
        'header': os.path.join(prefix, opts['includedir'], 'numapage.h'),
        'pkg-config file': os.path.join(libdir, 'pkgconfig', 'numapage.pc'),
        'command': os.path.join(prefix, opts['bindir'], 'numapage'),
        'CMake package': os.path.join(libdir, 'cmake', 'numapage', 'numapageConfig.cmake'),
        'CMake package version': os.path.join(libdir, 'cmake', 'numapage', 'numapageConfigVersion.cmake'),
    }
    for sec in '137':
        want['man page numapage.' + sec] = os.path.join(prefix, opts['mandir'], 'man' + sec,
                                                         'numapage.' + sec)
    # `man numa_page_alloc_onnode` finds numapage(3) through a link per function.
    want['man3 link numa_page_alloc_onnode.3'] = os.path.join(prefix, opts['mandir'], 'man3',
                                                               'numa_page_alloc_onnode.3')
    for what, path in want.items():
        if not os.path.exists(path):
            sys.exit('FAILED: %s not installed: no %s\nstage holds:\n%s' % (
                what, path, '\n'.join(glob.glob(stage + '/**', recursive=True))))
    for link, target in (('soname link', 'shared library'), ('development link', 'shared library'),
                         ('man3 link numa_page_alloc_onnode.3', 'man page numapage.3')):
        if not os.path.islink(want[link]) or \
                os.path.realpath(want[link]) != os.path.realpath(want[target]):
            sys.exit('FAILED: %s %s is not a symbolic link to %s' % (link, want[link], want[target]))
    soname = re.search(r'SONAME\)?\s+Library soname: \[(.*)\]',
                       run(['readelf', '-d', want['shared library']]).stdout)
    if not soname or soname.group(1) != os.path.basename(want['soname link']):
        sys.exit('FAILED: soname of %s is %s' % (want['shared library'], soname and soname.group(1)))
    print('installed: ' + ', '.join(os.path.relpath(p, stage) for p in want.values()))

    # PKG_CONFIG_PATH comes before the system's directories, which still provide
    # numa.pc (our .pc requires it privately; hwloc is loaded at run time, not linked).
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(want['pkg-config file']),
               PKG_CONFIG_SYSROOT_DIR=stage)
    flags = shlex.split(run(['pkg-config', '--cflags', '--libs', 'numapage'], env=env).stdout)
    static = shlex.split(run(['pkg-config', '--static', '--cflags', '--libs', 'numapage'], env=env).stdout)
    print('pkg-config --cflags --libs numapage:', ' '.join(flags))
    print('pkg-config --static --cflags --libs numapage:', ' '.join(static))
    if not any(f.startswith('-I' + stage) for f in flags):
        sys.exit('FAILED: pkg-config does not point into the stage')
    # The linker would take libnumapage.so over libnumapage.a: ask for the archive by name.
    static = ['-l:libnumapage.a' if f == '-lnumapage' else f for f in static]

    runenv = dict(os.environ, LD_LIBRARY_PATH=libdir)
    runenv.pop('LD_PRELOAD', None)
    builds = [('shared, C', shlex.split(cc), ['-x', 'c'], flags, True)]
    if cxx:
        builds.append(('shared, C++', shlex.split(cxx), ['-x', 'c++'], flags, True))
    builds.append(('static, C', shlex.split(cc), ['-x', 'c'], static, False))
    for name, comp, lang, link, shared in builds:
        exe = os.path.join(tmp, 'consumer-' + re.sub(r'\W+', '-', name))
        run(comp + lang + [consumer] + ['-x', 'none', '-Wall', '-Wextra', '-Werror', '-pthread',
                                        '-o', exe] + link)
        out = run([exe], env=runenv).stdout
        lib = re.search(r'^library (.*)$', out, re.M).group(1)
        if shared and os.path.realpath(lib) != os.path.realpath(want['shared library']):
            sys.exit('FAILED: %s: numa_page_version came from %s, not the stage' % (name, lib))
        if not shared:
            if os.path.realpath(lib) != os.path.realpath(exe):
                sys.exit('FAILED: %s: numa_page_version came from %s, not the program' % (name, lib))
            if 'libnumapage' in run(['ldd', exe]).stdout:
                sys.exit('FAILED: %s: the static program still loads libnumapage.so' % name)
        if not out.rstrip().endswith('ok'):
            sys.exit('FAILED: %s: %s' % (name, out))
        print('%s: %s' % (name, '; '.join(out.split('\n')[:-2])))

    # The staged command preloads the staged library (found through LD_LIBRARY_PATH, since the
    # stage is not at the prefix compiled into the command) and sums the job's statistics.
    shared_exe = os.path.join(tmp, 'consumer-shared-C')
    p = run([want['command'], 'run', '--stats', '--raw', '--', shared_exe], env=runenv)
    m = re.search(r'^malloc_requested\s+bytes\s+(?:\d+\s+)*?(\d+)\s*$', p.stderr, re.M)
    if 'statistics of the job, 1 process' not in p.stderr or not m or int(m.group(1)) < 1000000:
        sys.exit('FAILED: numapage run --stats from the stage:\n' + p.stderr)
    print('numapage run --stats: malloc_requested total %s' % m.group(1))

    # A CMake project: find_package(numapage CONFIG) from the staged prefix, then the build tree.
    if not cmake:
        print('SKIP CMake consumer: no cmake (.ci/deps installs it)')
    else:
        src = os.path.join(os.path.dirname(os.path.abspath(consumer)), 'cmake_consumer')
        for where, define, want_lib in (
                ('staged prefix', '-DCMAKE_PREFIX_PATH=' + prefix, want['shared library']),
                ('build tree', '-Dnumapage_DIR=' + os.path.join(os.path.abspath(build), 'cmake'),
                 os.path.join(os.path.abspath(build), 'src', 'libnumapage.so.' + version))):
            bdir = os.path.join(tmp, 'cmake-' + where.replace(' ', '-'))
            cenv = dict(os.environ, CC=shlex.split(cc)[0])
            run([cmake, '-S', src, '-B', bdir, define, '-DCMAKE_BUILD_TYPE=Release'], env=cenv)
            run([cmake, '--build', bdir], env=cenv)
            renv = dict(runenv)
            if where == 'build tree':
                renv.pop('LD_LIBRARY_PATH', None)  # the imported target's path is absolute
            out = run([os.path.join(bdir, 'consumer')], env=renv).stdout
            lib = re.search(r'^library (.*)$', out, re.M).group(1)
            if os.path.realpath(lib) != os.path.realpath(want_lib) or not out.rstrip().endswith('ok'):
                sys.exit('FAILED: CMake consumer (%s) loaded %s, wanted %s:\n%s' % (where, lib, want_lib, out))
            print('CMake consumer (%s): %s' % (where, lib))
            static_exe = os.path.join(bdir, 'consumer_static')
            if not os.path.exists(static_exe):
                sys.exit('FAILED: CMake consumer (%s): no numapage::numapage_static target' % where)
            out = run([static_exe], env=renv).stdout
            if 'libnumapage' in run(['ldd', static_exe]).stdout or not out.rstrip().endswith('ok'):
                sys.exit('FAILED: CMake static consumer (%s):\n%s' % (where, out))
            print('CMake static consumer (%s): ok' % where)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print('ok')
