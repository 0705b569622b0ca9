#!/usr/bin/env python3
"""
tests/vm/vmrun.py — boots one emulated multi-node machine under QEMU and runs the vm tier in it.

Owns: the kernel cache (the Debian kernel .deb, its /boot, the PVH vmlinux cut out of the
bzImage; it lives in the build directory, <build>/vm-cache, not in the source tree: see
cache_dir for how to share one download between builds), the initramfs (written here as a newc cpio), the QEMU command line of every
topology, the serial protocol (ttyS0 kernel console, ttyS1 guest stdout, ttyS2 guest stderr,
ttyS3 status: "booted", then "status N"), boot-stall retries and timeouts (QEMU killed by PID),
and the host-side checks of what the guest reported (sysfs, lstopo XML against the fixture,
`numapage topology --json` against the QEMU topology). The placement checks themselves run in
the guest (tests/vm/guest.sh and the vm_* programs) and print "ok - " and "not ok - " lines
that are counted here.

Exit status: 0 all checks passed, 1 a check failed (or the guest never finished), 77 skipped
because QEMU or the kernel cannot be obtained (outside CI only: with CI=true that is a failure).
"""

import argparse
import fcntl
import gzip
import json
import lzma
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
MULTIARCH_LIB = '/usr/lib/x86_64-linux-gnu'
IN_CI = os.environ.get('CI', '').lower() in ('1', 'true', 'yes')


# ---- The topologies ------------------------------------------------------------------------
# Each node: (cpus, memory): memory is True (a share of what is left), False (memoryless) or a
# size in MiB. What the sized nodes leave of mem_mib is split evenly over the True ones, and
# the sizes add up to mem_mib exactly (QEMU insists). dist(a, b) for a != b.

def _pkg_dist(same, other, per_pkg):
    return lambda a, b: same if a // per_pkg == b // per_pkg else other


TOPOLOGIES = {
    # Threadripper 2990WX: one package, four dies, memory controllers only on dies 0 and 2.
    '2990wx': dict(smp='8,sockets=1,dies=4,cores=2,threads=1', mem_mib=1024,
                   nodes=[([0, 1], True), ([2, 3], False), ([4, 5], True), ([6, 7], False)],
                   dist=lambda a, b: 16),
    # Dell R7425 with two EPYC 7251 populated on one channel each: 8 dies, memory on 1 and 5.
    'r7425': dict(smp='8,sockets=2,dies=4,cores=1,threads=1', mem_mib=1024,
                  nodes=[([i], i in (1, 5)) for i in range(8)],
                  dist=_pkg_dist(16, 32, 4)),
    '2node': dict(smp='4,sockets=2,cores=2,threads=1', mem_mib=1024,
                  nodes=[([0, 1], True), ([2, 3], True)],
                  dist=lambda a, b: 20),
    '4node': dict(smp='8,sockets=4,cores=2,threads=1', mem_mib=1024,
                  nodes=[([2 * i, 2 * i + 1], True) for i in range(4)],
                  dist=lambda a, b: 20),
    # Two sockets plus a CPU-less memory expander (CXL type 3) as node 2.
    'cxl': dict(smp='4,sockets=2,cores=2,threads=1', mem_mib=768,
                nodes=[([0, 1], True), ([2, 3], True), ([], True)],
                dist=lambda a, b: 30 if 2 in (a, b) else 20),
    # Two sockets, one of them with a deliberately small node (issue 14: a node that fills
    # up, in a few seconds). The small one is node 1: node 0 holds the kernel image, the
    # initramfs and the guest's own processes, node 1 only its share of what the kernel
    # spreads over the nodes at boot (60-100 of its 125 MiB were free in the runs so far).
    'small': dict(smp='4,sockets=2,cores=2,threads=1', mem_mib=768,
                  nodes=[([0, 1], True), ([2, 3], 128)],
                  dist=lambda a, b: 20),
}

# Topologies whose guests also run the api and stress tiers under LD_PRELOAD (issue 6).
TIER_TOPOLOGIES = ('2990wx', 'r7425')
# NP_TEST_TIME_SCALE for those tiers under TCG (see main).
TCG_TIME_SCALE = 10


def distance(topo, a, b):
    return 10 if a == b else topo['dist'](a, b)


def node_mem_mib(topo):
    """MiB of memory of every node, in node order (0 for a memoryless one)."""
    nodes = topo['nodes']
    sized = sum(m for _, m in nodes if m is not True and m)
    nshare = sum(1 for _, m in nodes if m is True)
    left = topo['mem_mib'] - sized
    if left < 0 or (nshare and left % nshare) or (not nshare and left):
        raise ValueError('node memory does not add up to mem_mib')
    return [left // nshare if m is True else int(m or 0) for _, m in nodes]


def expected_fallback(topo, n):
    """Memory nodes by distance from n, as a list of tie groups (sets): order within a group is
    the library's choice (it may spread equidistant nodes)."""
    mem = [i for i, (_, m) in enumerate(topo['nodes']) if m]
    groups = {}
    for m in mem:
        groups.setdefault(distance(topo, n, m), set()).add(m)
    return [(d, groups[d]) for d in sorted(groups)]


def qemu_numa_args(topo):
    args = []
    sizes = node_mem_mib(topo)
    for i, (cpus, mem) in enumerate(topo['nodes']):
        spec = 'node,nodeid=%d' % i
        if cpus:
            spec += ',cpus=%d-%d' % (cpus[0], cpus[-1])
        if mem:
            args += ['-object', 'memory-backend-ram,id=m%d,size=%dM' % (i, sizes[i])]
            spec += ',memdev=m%d' % i
        args += ['-numa', spec]
    n = len(topo['nodes'])
    for a in range(n):
        for b in range(a + 1, n):
            args += ['-numa', 'dist,src=%d,dst=%d,val=%d' % (a, b, distance(topo, a, b))]
    return args


# ---- Output ----------------------------------------------------------------------------------

class Results:
    def __init__(self):
        self.ok = self.failed = 0

    def check(self, cond, what, why=''):
        if cond:
            self.ok += 1
            print('ok - %s' % what)
        else:
            self.failed += 1
            print('not ok - %s%s' % (what, ': ' + why if why else ''))
        return cond


def log(msg):
    print('# ' + msg, flush=True)


def prerequisite_missing(msg):
    print('# missing prerequisite: ' + msg)
    if IN_CI:
        print('not ok - vm prerequisites (CI=true: a missing prerequisite is a failure)')
        sys.exit(1)
    print('# skipped: the vm tier needs it (apt-get install qemu-system-x86 busybox-static '
          'numactl hwloc; network for the kernel)')
    sys.exit(SKIP)


# ---- The kernel ------------------------------------------------------------------------------

class Lock:
    """An flock on a file, so that parallel meson tests fetch and extract once."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


def run_quiet(cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True)


def fetch_kernel_deb(cache):
    """Downloads linux-image-amd64 and the image package it depends on into cache/debs.
    Returns the image .deb, or None with a reason printed."""
    if not shutil.which('apt-get') or not shutil.which('dpkg-deb'):
        log('apt-get/dpkg-deb not found')
        return None
    debs = os.path.join(cache, 'debs')
    os.makedirs(debs, exist_ok=True)
    # _apt cannot write into a root-owned cache: download as the caller.
    apt = ['apt-get', 'download', '-o', 'APT::Sandbox::User=' + (
        'root' if os.geteuid() == 0 else os.environ.get('USER', 'nobody'))]
    r = run_quiet(apt + ['linux-image-amd64'], cwd=debs)
    metas = sorted(f for f in os.listdir(debs) if f.startswith('linux-image-amd64_'))
    if r.returncode != 0 or not metas:
        log('apt-get download linux-image-amd64 failed: ' + r.stdout.strip()[-300:])
        return None
    dep = run_quiet(['dpkg-deb', '-f', os.path.join(debs, metas[-1]), 'Depends']).stdout
    m = re.search(r'(linux-image-[0-9][^\s,|()]*)', dep)
    if not m:
        log('no image package in Depends: ' + dep)
        return None
    pkg = m.group(1)
    r = run_quiet(apt + [pkg], cwd=debs)
    found = sorted(f for f in os.listdir(debs) if f.startswith(pkg + '_') and f.endswith('.deb'))
    if r.returncode != 0 or not found:
        log('apt-get download %s failed: %s' % (pkg, r.stdout.strip()[-300:]))
        return None
    return os.path.join(debs, found[-1])


def extract_boot(deb, dest):
    """Only ./boot of the package (the guest needs no modules), into dest; nothing touches the
    host's /boot."""
    tmp = dest + '.tmp'
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    p1 = subprocess.Popen(['dpkg-deb', '--fsys-tarfile', deb], stdout=subprocess.PIPE)
    p2 = subprocess.run(['tar', '-x', '-C', tmp, './boot'], stdin=p1.stdout)
    p1.stdout.close()
    if p1.wait() != 0 or p2.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        return False
    os.rename(tmp, dest)
    return True


def elf_has_pvh_note(data):
    """True when data is an x86-64 ELF with a Xen PHYS32_ENTRY note (type 18): QEMU then boots
    it through the PVH entry point, skipping the decompressor and the real-mode setup."""
    if data[:4] != b'\x7fELF' or data[4] != 2:
        return False
    phoff = int.from_bytes(data[0x20:0x28], 'little')
    phentsize = int.from_bytes(data[0x36:0x38], 'little')
    phnum = int.from_bytes(data[0x38:0x3a], 'little')
    for i in range(phnum):
        ph = phoff + i * phentsize
        if int.from_bytes(data[ph:ph + 4], 'little') != 4:  # PT_NOTE
            continue
        off = int.from_bytes(data[ph + 8:ph + 16], 'little')
        size = int.from_bytes(data[ph + 32:ph + 40], 'little')
        pos, end = off, off + size
        while pos + 12 <= end:
            namesz, descsz, ntype = (int.from_bytes(data[pos + k:pos + k + 4], 'little')
                                     for k in (0, 4, 8))
            name = data[pos + 12:pos + 12 + namesz].rstrip(b'\0')
            if name == b'Xen' and ntype == 18:
                return True
            pos += 12 + ((namesz + 3) & ~3) + ((descsz + 3) & ~3)
    return False


def extract_vmlinux(bzimage, out):
    """Cuts the xz payload out of the bzImage and keeps it if it is a PVH-capable ELF."""
    with open(bzimage, 'rb') as f:
        data = f.read()
    pos = data.find(b'\xfd7zXZ\x00')
    while pos >= 0:
        try:
            elf = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(data[pos:])
        except lzma.LZMAError:
            elf = b''
        if elf_has_pvh_note(elf):
            with open(out + '.tmp', 'wb') as f:
                f.write(elf)
            os.rename(out + '.tmp', out)
            return True
        pos = data.find(b'\xfd7zXZ\x00', pos + 1)
    return False


def kernel_config_hz(config):
    try:
        with open(config) as f:
            m = re.search(r'^CONFIG_HZ=(\d+)', f.read(), re.M)
            return int(m.group(1)) if m else 250
    except OSError:
        return 250


def get_kernel(cache, refresh):
    """Returns (kernel image to boot, kernel config path or None, description)."""
    if os.environ.get('NP_VM_KERNEL'):
        k = os.environ['NP_VM_KERNEL']
        if not os.path.isfile(k):
            prerequisite_missing('NP_VM_KERNEL=%s does not exist' % k)
        return k, None, k
    os.makedirs(cache, exist_ok=True)
    with Lock(os.path.join(cache, '.lock')):
        kdirs = sorted(d for d in os.listdir(cache) if d.startswith('kernel-'))
        if refresh or not kdirs:
            deb = fetch_kernel_deb(cache)
            if not deb:
                prerequisite_missing('the Debian kernel (apt-get download linux-image-amd64)')
            kdir = os.path.join(cache, 'kernel-' + os.path.basename(deb)[:-4])
            if not os.path.isdir(kdir) and not extract_boot(deb, kdir):
                prerequisite_missing('extracting /boot from ' + deb)
        else:
            kdir = os.path.join(cache, kdirs[-1])
        boot = os.path.join(kdir, 'boot')
        vmlinuz = sorted(f for f in os.listdir(boot) if f.startswith('vmlinuz-'))
        if not vmlinuz:
            prerequisite_missing('no vmlinuz in ' + boot)
        bz = os.path.join(boot, vmlinuz[-1])
        config = os.path.join(boot, vmlinuz[-1].replace('vmlinuz-', 'config-'))
        pvh = os.path.join(kdir, 'vmlinux-pvh')
        nopvh = pvh + '.none'
        if not os.path.exists(pvh) and not os.path.exists(nopvh):
            if not extract_vmlinux(bz, pvh):
                open(nopvh, 'w').close()
        if os.path.exists(pvh):
            return pvh, config, '%s (PVH vmlinux)' % vmlinuz[-1]
        return bz, config, '%s (bzImage: no PVH ELF found in its xz payload)' % vmlinuz[-1]


def host_lpj(hz):
    """Loops per jiffy for lpj=, from the host's BogoMIPS (BogoMIPS = lpj * HZ / 500000): the
    guest then skips calibrating the delay loop on every vCPU, which is slow under TCG."""
    try:
        with open('/proc/cpuinfo') as f:
            m = re.search(r'^bogomips\s*:\s*([\d.]+)', f.read(), re.M)
        if m:
            return int(float(m.group(1)) * 500000 / hz)
    except OSError:
        pass
    return 4000000


# ---- The initramfs ---------------------------------------------------------------------------

class Cpio:
    """A newc archive built in memory; entries are added once, parents first."""

    def __init__(self):
        self.entries = []
        self.names = set()
        self.ino = 1

    def _add(self, name, mode, data=b'', nlink=1):
        name = name.lstrip('/')
        if name in self.names:
            return
        self.names.add(name)
        self.entries.append((name, mode, data, nlink))

    def dir(self, name):
        name = name.strip('/')
        if not name:
            return
        parent = os.path.dirname(name)
        if parent:
            self.dir(parent)
        self._add(name, stat.S_IFDIR | 0o755, nlink=2)

    def file(self, name, data, mode=0o755):
        self.dir(os.path.dirname(name.strip('/')))
        self._add(name, stat.S_IFREG | mode, data)

    def symlink(self, name, target):
        self.dir(os.path.dirname(name.strip('/')))
        self._add(name, stat.S_IFLNK | 0o777, target.encode())

    def has(self, name):
        return name.strip('/') in self.names

    def write(self, path):
        out = bytearray()

        def entry(name, mode, data, nlink):
            nb = name.encode() + b'\0'
            hdr = '070701' + ''.join('%08X' % v for v in (
                self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(nb), 0))
            self.ino += 1
            out.extend(hdr.encode() + nb)
            out.extend(b'\0' * (-len(out) % 4))
            out.extend(data)
            out.extend(b'\0' * (-len(out) % 4))

        for e in self.entries:
            entry(*e)
        entry('TRAILER!!!', 0, b'', 1)
        with open(path + '.tmp', 'wb') as f:
            f.write(out)
        os.rename(path + '.tmp', path)
        return len(out)


def add_host_path(cpio, path):
    """Adds a host file at the same path, recreating every symlink met on the way (the guest
    keeps Debian's merged-/usr layout: /lib -> usr/lib and so on)."""
    parts = [p for p in path.split('/') if p]
    cur = '/'
    hops = 0
    while parts:
        cur = os.path.join(cur, parts.pop(0))
        if os.path.islink(cur):
            hops += 1
            if hops > 40:
                raise RuntimeError('symlink loop at ' + cur)
            target = os.readlink(cur)
            cpio.symlink(cur, target)
            resolved = os.path.normpath(os.path.join(os.path.dirname(cur), target))
            parts = [p for p in resolved.split('/') if p] + parts
            cur = '/'
        elif parts:
            cpio.dir(cur)
    if not cpio.has(cur):
        with open(cur, 'rb') as f:
            cpio.file(cur, f.read(), stat.S_IMODE(os.stat(cur).st_mode))


def ldd_deps(binary):
    """(soname, host path) of every library ldd lists, the loader included."""
    r = run_quiet(['ldd', binary])
    if r.returncode != 0:
        return []  # static
    deps = []
    for line in r.stdout.splitlines():
        line = line.strip()
        m = re.match(r'(\S+) => (/\S+) \(', line)
        if m:
            deps.append((m.group(1), m.group(2)))
        elif line.startswith('/'):
            deps.append((os.path.basename(line.split()[0]), line.split()[0]))
        elif '=> not found' in line:
            raise RuntimeError('%s: %s' % (binary, line))
    return deps


INIT = r'''#!/bin/sh
# /init of the vm tier's guest (written by tests/vm/vmrun.py). ttyS1: stdout of the tests,
# ttyS2: their stderr, ttyS3: "booted" and "status N" for the host.
export PATH=/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/shm /tmp
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
for t in 1 2 3; do stty -F /dev/ttyS$t raw -echo 2>/dev/null; done
echo booted >/dev/ttyS3
sh /vm/guest.sh >/dev/ttyS1 2>/dev/ttyS2
echo "status $?" >/dev/ttyS3
poweroff -f
'''


def tier_tests(args):
    """The api and stress tiers' tests as meson registered them (meson-info/intro-tests.json),
    for the guests in TIER_TOPOLOGIES: they follow whatever those tiers add."""
    if not args.tiers:
        return []
    try:
        with open(os.path.join(args.build_root, 'meson-info', 'intro-tests.json')) as f:
            tests = json.load(f)
    except (OSError, ValueError) as e:
        log('no meson test list (%s): the api and stress tiers are not run in the guest' % e)
        return []
    out = []
    for t in tests:
        tier = [s.split(':')[-1] for s in t.get('suite', []) if s.split(':')[-1] in
                ('api', 'stress')]
        exe = t['cmd'][0] if t.get('cmd') else ''
        if not tier or not os.path.isfile(exe):
            continue
        with open(exe, 'rb') as f:
            if f.read(4) != b'\x7fELF':
                log('%s: not an ELF program, not run in the guest' % exe)
                continue
        name = re.sub(r'[^A-Za-z0-9_.-]', '_', t['name'])
        out.append(dict(tier=tier[0], name=name, cmd=t['cmd'], env=t.get('env') or {},
                        guest='/vm/%s/%s' % (tier[0], name)))
    return out


def build_initramfs(args, path):
    cpio = Cpio()
    for d in ('proc', 'sys', 'dev', 'tmp', 'run', 'root', 'etc', 'usr/bin', 'usr/sbin',
              'usr/lib', 'usr/lib64', MULTIARCH_LIB):
        cpio.dir(d)
    # Debian's merged /usr, as on the host.
    for top in ('bin', 'sbin', 'lib', 'lib64'):
        cpio.symlink(top, 'usr/' + top)
    cpio.file('etc/passwd', b'root:x:0:0:root:/root:/bin/sh\n', 0o644)
    cpio.file('etc/group', b'root:x:0:\n', 0o644)
    cpio.file('etc/hostname', b'guest\n', 0o644)

    busybox = shutil.which('busybox')
    if not busybox or run_quiet(['ldd', busybox]).returncode == 0:
        prerequisite_missing('a static busybox (busybox-static)')
    with open(busybox, 'rb') as f:
        cpio.file('usr/bin/busybox', f.read())
    applets = run_quiet([busybox, '--list-full']).stdout.split()
    host_tools = {}
    for t in ('numactl', 'lstopo-no-graphics'):
        p = shutil.which(t)
        if not p:
            prerequisite_missing(t)
        host_tools[t] = p

    elves = []  # (guest path, host path) of dynamically linked programs and libraries
    for t, p in host_tools.items():
        elves.append(('usr/bin/' + t, os.path.realpath(p)))
    elves.append(('usr/bin/numapage', args.numapage))
    lib = os.path.realpath(args.lib)
    elves.append((MULTIARCH_LIB + '/libnumapage.so.0', lib))
    for p in args.prog + args.extra:
        elves.append(('vm/bin/' + os.path.basename(p), p))
    tiers = tier_tests(args)
    for t in tiers:
        elves.append((t['guest'], t['cmd'][0]))

    build_root = os.path.realpath(args.build_root)
    for guest, host in elves:
        with open(host, 'rb') as f:
            cpio.file(guest, f.read())
        for soname, dep in ldd_deps(host):
            if os.path.realpath(dep).startswith(build_root + '/'):
                # A library of this build (libnumapage): under its soname on the default path.
                if not cpio.has(MULTIARCH_LIB + '/' + soname):
                    with open(dep, 'rb') as f:
                        cpio.file(MULTIARCH_LIB + '/' + soname, f.read())
            else:
                add_host_path(cpio, dep)
    cpio.symlink(MULTIARCH_LIB + '/libnumapage.so', 'libnumapage.so.0')
    # glibc dlopen()s libgcc_s for pthread_cancel and pthread_exit (the unwinder): no ldd lists
    # it, and option_api cancels a thread.
    libgcc = MULTIARCH_LIB + '/libgcc_s.so.1'
    if os.path.exists(libgcc) and not cpio.has(libgcc):
        add_host_path(cpio, libgcc)

    for a in applets:
        a = a.replace('sbin/', 'usr/sbin/', 1) if a.startswith('sbin/') else a
        a = a.replace('bin/', 'usr/bin/', 1) if a.startswith('bin/') else a
        if not cpio.has(a) and os.path.basename(a) not in host_tools:
            cpio.symlink(a, '/usr/bin/busybox')

    with open(os.path.join(HERE, 'guest.sh'), 'rb') as f:
        cpio.file('vm/guest.sh', f.read())
    # The order matters: vm_bind confines its process to one node and runs last.
    cpio.file('vm/bin.list', ''.join('/vm/bin/%s\n' % os.path.basename(p)
                                     for p in args.prog).encode(), 0o644)
    fixtures = os.path.realpath(args.fixtures)
    lines = []
    for t in tiers:
        # The guest has its libraries on the default path and the fixtures in /vm/topologies.
        env = ['%s=%s' % (k, '/vm/topologies' if os.path.realpath(v) == fixtures else v)
               for k, v in sorted(t['env'].items()) if k != 'LD_LIBRARY_PATH']
        lines.append(' '.join(shlex.quote(w) for w in
                              ['tier', t['tier'], t['name']] + env + [t['guest']] + t['cmd'][1:]))
    cpio.file('vm/tiers.sh', ('\n'.join(lines) + '\n').encode(), 0o644)
    if tiers:
        for f in sorted(os.listdir(fixtures)):
            if f.endswith('.xml'):
                with open(os.path.join(fixtures, f), 'rb') as x:
                    cpio.file('vm/topologies/' + f, x.read(), 0o644)
    cpio.file('init', INIT.encode())
    return cpio.write(path)


# ---- QEMU ------------------------------------------------------------------------------------

class Qemu:
    def __init__(self, cmd, outdir):
        self.cmd = cmd
        self.outdir = outdir
        self.proc = None

    def files(self):
        return [os.path.join(self.outdir, n) for n in
                ('console.log', 'stdout.log', 'stderr.log', 'status.log')]

    def start(self):
        for f in self.files():
            open(f, 'w').close()
        serial = []
        for f in self.files():
            serial += ['-serial', 'file:' + f]
        self.proc = subprocess.Popen(self.cmd + serial, stdin=subprocess.DEVNULL,
                                     stdout=open(os.path.join(self.outdir, 'qemu.log'), 'w'),
                                     stderr=subprocess.STDOUT)

    def status(self):
        with open(self.files()[3], 'rb') as f:
            return f.read().decode(errors='replace').replace('\r', '')

    def kill(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def run(self, boot_timeout, run_timeout):
        """Returns ('done', status) | ('stall', None) | ('timeout', None) | ('exit', None)."""
        self.start()
        t0 = time.monotonic()
        booted_at = None
        while True:
            st = self.status()
            if booted_at is None and 'booted' in st:
                booted_at = time.monotonic()
                self.boot_s = booted_at - t0
            m = re.search(r'^status (\d+)$', st, re.M)
            if m:
                try:  # poweroff -f follows at once
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.kill()
                return 'done', int(m.group(1))
            if self.proc.poll() is not None:
                return 'exit', None
            now = time.monotonic()
            if booted_at is None and now - t0 > boot_timeout:
                self.kill()
                return 'stall', None
            if booted_at is not None and now - booted_at > run_timeout:
                self.kill()
                return 'timeout', None
            time.sleep(0.05)


def qemu_cmd(args, topo, kernel, append, accel):
    cmd = [args.qemu, '-machine', 'pc', '-nodefaults', '-display', 'none', '-no-reboot',
           '-smp', topo['smp'], '-m', '%dM' % topo['mem_mib']]
    if accel == 'kvm':
        cmd += ['-accel', 'kvm', '-cpu', 'host']
    else:
        # vendor=GenuineIntel: the AMD default of "max" warns about dies. No AVX-512 in the
        # guest: never build guest programs with -march=native.
        cmd += ['-accel', 'tcg', '-cpu', 'max,vendor=GenuineIntel']
    cmd += qemu_numa_args(topo)
    cmd += ['-kernel', kernel, '-initrd', args.initrd_path, '-append', append]
    return cmd


def kvm_usable(args, kernel, append, cache):
    """KVM only when the CPU advertises VMX/SVM and a guest really boots with it: /dev/kvm can
    exist on a paravirtual host where an unmodified kernel never finishes booting."""
    if os.environ.get('NP_VM_ACCEL') in ('tcg', 'kvm'):
        return os.environ['NP_VM_ACCEL'] == 'kvm'
    try:
        with open('/proc/cpuinfo') as f:
            flags = re.search(r'^flags\s*:(.*)$', f.read(), re.M).group(1).split()
    except (OSError, AttributeError):
        return False
    if not ('vmx' in flags or 'svm' in flags) or not os.access('/dev/kvm', os.R_OK | os.W_OK):
        return False
    try:
        with open('/proc/sys/kernel/random/boot_id') as f:
            boot_id = f.read().strip()
    except OSError:
        boot_id = 'unknown'
    memo = os.path.join(cache, 'kvm-probe')
    with Lock(os.path.join(cache, '.lock')):
        try:
            with open(memo) as f:
                b, verdict = f.read().split()
                if b == boot_id:
                    return verdict == 'yes'
        except (OSError, ValueError):
            pass
        outdir = os.path.join(args.outdir, 'kvm-probe')
        os.makedirs(outdir, exist_ok=True)
        q = Qemu(qemu_cmd(args, TOPOLOGIES['2node'], kernel, append + ' np.probe=1', 'kvm'),
                 outdir)
        t0 = time.monotonic()
        res, status = q.run(boot_timeout=20, run_timeout=20)
        ok = res == 'done' and status == 0
        log('KVM probe: %s in %.1f s' % ('boots' if ok else 'does not work (%s)' % res,
                                          time.monotonic() - t0))
        with open(memo, 'w') as f:
            f.write('%s %s\n' % (boot_id, 'yes' if ok else 'no'))
        return ok


# ---- Host-side checks of the guest's report -------------------------------------------------

def sections(text):
    """'@@begin NAME' ... '@@end' blocks of the guest's stdout, and the rest."""
    secs, rest, cur, buf = {}, [], None, []
    for line in text.split('\n'):
        if cur is None and line.startswith('@@begin '):
            cur, buf = line[8:].strip(), []
        elif cur is not None and line == '@@end':
            secs[cur] = '\n'.join(buf)
            cur = None
        elif cur is not None:
            buf.append(line)
        else:
            rest.append(line)
    if cur is not None:
        secs[cur] = '\n'.join(buf) + '\n@@truncated'
    return secs, rest


def split_rc(body):
    m = re.search(r'\n?@@rc (\d+)\s*$', body)
    if not m:
        return body, None
    return body[:m.start()], int(m.group(1))


def parse_cpulist(s):
    cpus = set()
    for part in s.strip().split(','):
        if not part:
            continue
        if '-' in part:
            a, b = part.split('-')
            cpus.update(range(int(a), int(b) + 1))
        else:
            cpus.add(int(part))
    return cpus


def hwloc_bitmap(s):
    """hwloc's "0x000000ff" or "0xf...f,0x00000003" (32-bit words, most significant first)."""
    bits = set()
    words = s.split(',')
    for k, w in enumerate(reversed(words)):
        if w == '0xf...f':
            raise ValueError('infinite bitmap')
        v = int(w, 16)
        for b in range(32 if len(words) > 1 else v.bit_length()):
            if v >> b & 1:
                bits.add(32 * k + b)
    return bits


def facts_from_xml(text):
    """{os_id: (cpus, has_memory)} and {(a, b): distance} from an hwloc XML export."""
    root = ET.fromstring(text)
    nodes = {}
    for o in root.iter('object'):
        if o.get('type') == 'NUMANode':
            nodes[int(o.get('os_index'))] = (hwloc_bitmap(o.get('cpuset', '0x0')),
                                            int(o.get('local_memory', '0')) > 0)
    dist = {}
    for d in root.iter('distances2'):
        if d.get('type') != 'NUMANode' or d.get('name') != 'NUMALatency':
            continue
        idx = [int(x) for x in ' '.join(i.text or '' for i in d.iter('indexes')).split()]
        vals = [int(x) for x in ' '.join(v.text or '' for v in d.iter('u64values')).split()]
        n = len(idx)
        if len(vals) != n * n:
            raise ValueError('distance matrix of %d values for %d nodes' % (len(vals), n))
        for i in range(n):
            for j in range(n):
                dist[(idx[i], idx[j])] = vals[i * n + j]
    return nodes, dist


def spec_facts(topo):
    nodes = {i: (set(c), bool(m)) for i, (c, m) in enumerate(topo['nodes'])}
    n = len(topo['nodes'])
    dist = {(a, b): distance(topo, a, b) for a in range(n) for b in range(n)}
    return nodes, dist


def diff_facts(got, want):
    """A short description of the first differences, or '' when equal."""
    gn, gd = got
    wn, wd = want
    out = []
    if sorted(gn) != sorted(wn):
        out.append('nodes %s, expected %s' % (sorted(gn), sorted(wn)))
    for i in sorted(set(gn) & set(wn)):
        if gn[i][0] != wn[i][0]:
            out.append('node %d cpus %s, expected %s' % (i, sorted(gn[i][0]), sorted(wn[i][0])))
        if gn[i][1] != wn[i][1]:
            out.append('node %d %s, expected %s' % (i, 'has memory' if gn[i][1] else
                                                    'memoryless', 'memory' if wn[i][1] else
                                                    'none'))
    if gd != wd:
        bad = sorted(k for k in set(gd) | set(wd) if gd.get(k) != wd.get(k))
        out.append('distances differ at %s' % ', '.join('%d->%d: %s vs %s' % (
            a, b, gd.get((a, b)), wd.get((a, b))) for a, b in bad[:4]))
    return '; '.join(out[:6])


def check_sysfs(res, body, topo):
    """The kernel saw the topology QEMU was told to build (a harness self-check)."""
    nodes, dist, memkb = {}, {}, {}
    for line in body.split('\n'):
        m = re.match(r'node (\d+) cpus=(\S*) memkb=(\d+) dist=(\S+)', line)
        if m:
            n = int(m.group(1))
            memkb[n] = int(m.group(3))
            nodes[n] = (parse_cpulist(m.group(2)), int(m.group(3)) > 0)
            for j, d in enumerate(m.group(4).split(',')):
                dist[(n, j)] = int(d)
    res.check(nodes, 'kernel: sysfs lists NUMA nodes', body[:200])
    m = re.search(r'^numa_balancing (\d+)', body, re.M)
    res.check(m and m.group(1) == '0', 'kernel: automatic NUMA balancing is off (it would move '
              'pages behind the checks)', m.group(0) if m else 'not reported')
    why = diff_facts((nodes, dist), spec_facts(topo))
    res.check(not why, 'kernel: nodes, CPUs, memory and SLIT in /sys match the QEMU topology', why)
    # A node given a size of its own (the small guest): the kernel sees about that much (less
    # what it reserves for itself there).
    for i, (_, mem) in enumerate(topo['nodes']):
        if mem is not True and mem:
            kb = memkb.get(i, 0)
            res.check(0.85 * mem * 1024 <= kb <= mem * 1024, 'kernel: node %d has the %d MiB it '
                      'was given' % (i, mem), 'MemTotal %d kB' % kb)


def check_lstopo(res, body, topo, fixture, export):
    xml, rc = split_rc(body)
    if not res.check(rc == 0 and '<topology' in xml, 'lstopo: exported the guest topology',
                     'rc %s' % rc):
        return
    try:
        got = facts_from_xml(xml)
    except (ET.ParseError, ValueError) as e:
        res.check(False, 'lstopo: XML parses', str(e))
        return
    why = diff_facts(got, spec_facts(topo))
    res.check(not why, 'lstopo: hwloc sees the QEMU topology (nodes, memoryless, CPUs, '
              'distances)', why)
    if export:
        with open(export, 'w') as f:
            f.write(xml.strip() + '\n')
        log('guest topology written to ' + export)
    if not os.path.exists(fixture):
        res.check(False, 'lstopo: fixture %s exists' % fixture)
        return
    with open(fixture) as f:
        want = facts_from_xml(f.read())
    why = diff_facts(got, want)
    res.check(not why, 'lstopo: the guest agrees with the fixture %s' % os.path.basename(fixture),
              why)


def check_numapage_json(res, body, err, topo):
    text, rc = split_rc(body)
    try:
        j = json.loads(text)
    except ValueError as e:
        res.check(False, 'numapage topology --json: output is JSON', '%s (rc %s, stderr %s)' % (
            e, rc, err.strip()[-200:]))
        return
    res.check(rc == 0, 'numapage topology --json: exit status 0', 'rc %s: %s' % (
        rc, err.strip()[-200:]))
    res.check(j.get('source') == 'system' and j.get('is_system') is True,
              'numapage topology: loaded this machine', 'source %s' % j.get('source'))
    nodes = {n['os_id']: n for n in j.get('nodes', [])}
    order = [n['os_id'] for n in j.get('nodes', [])]
    want = dict(enumerate(topo['nodes']))
    problems = []
    if sorted(nodes) != sorted(want):
        problems.append('nodes %s, expected %s' % (sorted(nodes), sorted(want)))
    for i in sorted(set(nodes) & set(want)):
        n, (cpus, mem) = nodes[i], want[i]
        if sorted(n.get('cpus', [])) != cpus:
            problems.append('node %d cpus %s, expected %s' % (i, n.get('cpus'), cpus))
        if n.get('memoryless') != (not mem) or (n.get('mem_bytes', 0) > 0) != bool(mem):
            problems.append('node %d memoryless=%s mem_bytes=%s, expected %s' % (
                i, n.get('memoryless'), n.get('mem_bytes'), 'memory' if mem else 'memoryless'))
        if n.get('cpuless') != (not cpus):
            problems.append('node %d cpuless=%s' % (i, n.get('cpuless')))
        dists = n.get('distances', [])
        wd = [distance(topo, i, o) for o in order]
        if dists != wd:
            problems.append('node %d distances %s, expected %s' % (i, dists, wd))
    res.check(not problems, 'numapage topology: nodes, memoryless and CPU-less ones, CPUs and '
              'distances are the QEMU topology', '; '.join(problems[:5]))
    problems = []
    for i in sorted(set(nodes) & set(want)):
        fb, fd = nodes[i].get('fallback', []), nodes[i].get('fallback_dist', [])
        groups = expected_fallback(topo, i)
        flat = [(d, m) for d, g in groups for m in sorted(g)]
        ok = len(fb) == len(flat) and fd == [d for d, _ in flat]
        k = 0
        for d, g in groups:
            ok = ok and set(fb[k:k + len(g)]) == g
            k += len(g)
        if not ok:
            problems.append('node %d -> %s (dist %s), expected %s' % (
                i, fb, fd, ' '.join('%s@%d' % (sorted(g), d) for d, g in groups)))
    res.check(not problems, 'numapage topology: every fallback order is the memory nodes, '
              'nearest first', '; '.join(problems[:5]))


def count_guest_lines(res, lines):
    for line in lines:
        if line.startswith('ok - '):
            res.ok += 1
        elif line.startswith('not ok - '):
            res.failed += 1


# ---- Main ------------------------------------------------------------------------------------

def cache_dir(args):
    """Where the guest kernel is kept (about 140 MB, fetched once): --cache; else $NP_VM_CACHE
    (one download shared by several build directories or clones); else the build's vm_cache
    option (meson setup -Dvm_cache=DIR); else <build>/vm-cache. Never the source tree."""
    if args.cache:
        return os.path.abspath(args.cache)
    if os.environ.get('NP_VM_CACHE'):
        return os.path.abspath(os.environ['NP_VM_CACHE'])
    try:
        with open(os.path.join(args.build_root, 'meson-info', 'intro-buildoptions.json')) as f:
            opt = {o['name']: o['value'] for o in json.load(f)}
        if opt.get('vm_cache'):
            return os.path.abspath(opt['vm_cache'])
    except (OSError, ValueError):
        pass
    return os.path.join(os.path.abspath(args.build_root), 'vm-cache')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--topology', required=True, choices=sorted(TOPOLOGIES))
    ap.add_argument('--build-root', required=True)
    ap.add_argument('--outdir', required=True, help='logs and the initramfs go here')
    ap.add_argument('--cache', default=None, help='the kernel cache (default: see cache_dir)')
    ap.add_argument('--fixtures', default=os.path.join(HERE, '..', 'topologies'))
    ap.add_argument('--numapage', required=True, help='the numapage tool')
    ap.add_argument('--lib', required=True, help='libnumapage.so')
    ap.add_argument('--prog', action='append', default=[], help='a vm_* test program')
    ap.add_argument('--extra', action='append', default=[], help='a program the vm_* programs '
                    'run (bench/stream): copied into /vm/bin, not run by itself')
    ap.add_argument('--qemu', default='qemu-system-x86_64')
    ap.add_argument('--boot-timeout', type=float, default=float(
        os.environ.get('NP_VM_BOOT_TIMEOUT', 60)), help='seconds until a boot counts as stalled')
    ap.add_argument('--run-timeout', type=float, default=float(
        os.environ.get('NP_VM_RUN_TIMEOUT', 0)), help='seconds for the guest tests (default: '
                    '240, 600 in the guests that also run the api and stress tiers)')
    ap.add_argument('--retries', type=int, default=2, help='reboots after a stalled boot')
    ap.add_argument('--tiers', action=argparse.BooleanOptionalAction, default=None,
                    help='run the api and stress tiers in the guest (default: in %s)' %
                    ', '.join(TIER_TOPOLOGIES))
    ap.add_argument('--export-xml', help='write the guest\'s lstopo XML here')
    ap.add_argument('--refresh-kernel', action='store_true')
    ap.add_argument('--quiet-console', action='store_true', default=True)
    args = ap.parse_args()

    t_start = time.monotonic()
    topo = TOPOLOGIES[args.topology]
    if args.tiers is None:
        args.tiers = args.topology in TIER_TOPOLOGIES
    if not args.run_timeout:
        args.run_timeout = 600 if args.tiers else 240
    args.qemu = shutil.which(args.qemu)
    if not args.qemu:
        prerequisite_missing('qemu-system-x86_64 (qemu-system-x86)')
    args.cache = cache_dir(args)
    log('kernel cache: ' + args.cache)
    args.outdir = os.path.abspath(os.path.join(args.outdir, args.topology))
    os.makedirs(args.outdir, exist_ok=True)

    kernel, config, kdesc = get_kernel(args.cache, args.refresh_kernel)
    lpj = host_lpj(kernel_config_hz(config) if config else 250)
    args.initrd_path = os.path.join(args.outdir, 'initramfs.cpio')
    t0 = time.monotonic()
    size = build_initramfs(args, args.initrd_path)
    log('initramfs: %.1f MiB in %.2f s' % (size / 2**20, time.monotonic() - t0))

    # numa_balancing=disable: nothing moves pages behind the checks' back. quiet: the console
    # is a slow serial port (NP_VM_VERBOSE=1 shows the whole boot log). The rest only shortens
    # a TCG boot (by ~15%): no crypto self-tests, no Spectre patching, no TSC watchdog.
    append = ('console=ttyS0 panic=-1 numa_balancing=disable lpj=%d%s mitigations=off '
              'cryptomgr.notests tsc=reliable no_timer_check np.topo=%s' % (
                  lpj, '' if os.environ.get('NP_VM_VERBOSE') else ' quiet', args.topology))
    accel = 'kvm' if kvm_usable(args, kernel, append, args.cache) else 'tcg'
    # How much slower than the host the guest runs, for tests with deadlines: guest.sh exports
    # it to the api and stress tiers as NP_TEST_TIME_SCALE. Under TCG, 8 vCPUs share 2 host
    # cores and every instruction is translated: threaded tests run 10-20x slower.
    append += ' np.timescale=%d' % (1 if accel == 'kvm' else TCG_TIME_SCALE)
    cmd = qemu_cmd(args, topo, kernel, append, accel)
    log('kernel %s, %s, -smp %s -m %dM' % (kdesc, accel, topo['smp'], topo['mem_mib']))
    with open(os.path.join(args.outdir, 'qemu-cmd.txt'), 'w') as f:
        f.write(' '.join(cmd) + '\n')

    q = Qemu(cmd, args.outdir)

    def on_signal(signum, frame):
        q.kill()
        print('not ok - killed by signal %d' % signum)
        sys.exit(1)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    res = Results()
    for attempt in range(args.retries + 1):
        t0 = time.monotonic()
        outcome, status = q.run(args.boot_timeout, args.run_timeout)
        wall = time.monotonic() - t0
        if outcome != 'stall':
            break
        log('boot %d stalled (no "booted" within %g s): QEMU killed%s' % (
            attempt + 1, args.boot_timeout, ', retrying' if attempt < args.retries else ''))
    console, out, err, st = (open(f, 'rb').read().decode(errors='replace').replace('\r', '')
                             for f in q.files())
    if outcome == 'done':
        log('guest: booted in %.1f s, ran in %.1f s, status %d' % (q.boot_s, wall, status))
    secs, rest = sections(out)

    if 'sysfs' in secs:
        check_sysfs(res, secs['sysfs'], topo)
    if 'lstopo-xml' in secs:
        check_lstopo(res, secs['lstopo-xml'], topo,
                     os.path.join(args.fixtures, args.topology + '.xml'), args.export_xml)
    if 'numapage-json' in secs:
        check_numapage_json(res, secs['numapage-json'], secs.get('numapage-stderr', ''), topo)
    for line in rest:
        if line.strip():
            print(line)
    count_guest_lines(res, rest)

    res.check(outcome == 'done', 'guest: ran to the end and reported its status', {
        'stall': 'every boot stalled; console tail: ' + console[-800:],
        'timeout': 'tests still running after %g s: QEMU killed; stderr tail: %s' % (
            args.run_timeout, err[-800:]),
        'exit': 'QEMU exited without a status: ' + open(os.path.join(
            args.outdir, 'qemu.log')).read()[-500:] + console[-800:],
    }.get(outcome, ''))
    if outcome == 'done' and status != 0 and res.failed == 0:
        res.check(False, 'guest: exit status', 'the guest script returned %d' % status)
    if err.strip():
        tail = err.strip().split('\n')[-15:]
        print('# guest stderr (last %d lines):' % len(tail))
        for line in tail:
            print('#   ' + line)
    log('%s: %d ok, %d failed; %.1f s in all (logs: %s)' % (
        args.topology, res.ok, res.failed, time.monotonic() - t_start, args.outdir))
    return 1 if res.failed or not res.ok else 0


if __name__ == '__main__':
    sys.exit(main())
