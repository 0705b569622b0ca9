#!/usr/bin/env python3
"""Checks the manual pages (man/meson.build), so they can neither break nor silently rot.

check_man.py lint PAGE...
    groff renders each page with every warning enabled (-ww) and man(1) shows it with
    --warnings=all, both without a single warning, and no rendered line is wider than 80
    columns.
check_man.py coverage HEADER NUMAPAGE TOOLS_DIR MESON_BUILD PAGE1 PAGE3 PAGE7
    numapage(3): every function of HEADER is in the SYNOPSIS and described after it, and every
        public macro, enum and struct name is there; MESON_BUILD installs a man3 link for
        every function (`man numa_page_alloc`), and for nothing else.
    numapage(7): every option that `NUMAPAGE options` lists is an item of ENVIRONMENT that says
        "Default: <its default>" (and NUMAPAGE_CONF is one too), and every counter of
        NUMA_PAGE_STAT_ITEMS is an item of STATISTICS.
    numapage(1): every subcommand has its section, and every option that `NUMAPAGE --help` and
        `NUMAPAGE CMD --help` show is documented; every environment variable that the
        command's sources (TOOLS_DIR) read is in its ENVIRONMENT section.
"""
import os
import re
import shutil
import subprocess
import sys

errors = []


def error(msg):
    errors.append(msg)


def render(page, width=None, plain=False):
    """The page as text: plain (no bold or underline, lines as long as they come) or as man
    shows it at width columns."""
    if plain:
        cmd = ['groff', '-man', '-Tascii', '-rLL=4000n', '-P-cbou', page]
        env = dict(os.environ)
    else:
        cmd = ['man', '--warnings=all', '-E', 'UTF-8', '-l', page]
        env = dict(os.environ, MANWIDTH=str(width), MANPAGER='cat', PAGER='cat', MAN_KEEP_FORMATTING='')
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
    if p.returncode != 0:
        error('%s: %s exited %d: %s' % (page, cmd[0], p.returncode, p.stderr))
    return p.stdout, p.stderr


def lint(pages):
    for tool in ('groff', 'man'):
        if not shutil.which(tool):
            sys.exit('FAILED: %s is missing (apt-get install groff-base man-db; see .ci/deps)' % tool)
    for page in pages:
        before = len(errors)
        p = subprocess.run(['groff', '-man', '-Tutf8', '-ww', '-z', page], capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0 or p.stderr:
            error('%s: groff -ww: %s' % (page, p.stderr.strip() or 'exit %d' % p.returncode))
        out, err = render(page, width=80)
        if err.strip():
            error('%s: man -l: %s' % (page, err.strip()))
        # man strips formatting when it writes to a pipe; drop any backspace overstrike left.
        for n, line in enumerate(re.sub(r'.\x08', '', out).split('\n'), 1):
            if len(line) > 80:
                error('%s: rendered line %d is %d columns wide: %s' % (page, n, len(line), line))
        if len(out.split('\n')) < 20:
            error('%s: rendered to almost nothing' % page)
        if len(errors) == before:
            print('%s: %d lines, no warnings' % (os.path.basename(page), len(out.split('\n'))))


def sections(text):
    """{SECTION: body} of a plain rendering (section headings start in column 0)."""
    out, name = {}, None
    for line in text.split('\n'):
        if re.match(r'^[A-Z][A-Z ]+$', line):
            name = line.strip()
            out[name] = ''
        elif name:
            out[name] += line + '\n'
    return out


def items(body):
    """{tag: paragraph} of the .TP items of a section (tag at 7 columns, text at 14)."""
    out, tag = {}, None
    lines = body.split('\n') + ['']
    for line, after in zip(lines, lines[1:]):
        m = re.match(r'^ {7}(\S.*)$', line)
        if m:
            # A tag is followed at once by its indented text; a paragraph by a blank line.
            tag = m.group(1).strip() if after.startswith(' ' * 14) else None
            if tag:
                out.setdefault(tag, '')
        elif tag and line.startswith(' ' * 14):
            out[tag] += ' ' + line.strip()
    return {k: re.sub(r'\s+', ' ', v).strip() for k, v in out.items()}


def header_names(path):
    text = open(path).read()
    code = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    funcs = re.findall(r'NUMA_PAGE_API\s+[^;{}()]*?\b(numa_page_\w+)\s*\(', code)
    macros = [m for m in re.findall(r'^#define\s+(NUMA_PAGE_\w+)', code, re.M)
              if m != 'NUMA_PAGE_API' and not m.endswith('_')]
    types = re.findall(r'\b(?:enum|struct)\s+(numa_page_\w+)\s*\{', code)
    stats = re.findall(r'\bX\((\w+),\s*(\w+),\s*"', code)
    if not funcs or not stats:
        sys.exit('FAILED: cannot read the declarations of %s' % path)
    return funcs, macros, types, stats


def coverage(header, numapage, tools, meson_build, page1, page3, page7):
    funcs, macros, types, stats = header_names(header)

    # numapage(3)
    text3 = render(page3, plain=True)[0]
    s3 = sections(text3)
    synopsis = s3.get('SYNOPSIS', '')
    rest = ''.join(v for k, v in s3.items() if k not in ('SYNOPSIS', 'NAME'))
    for f in funcs:
        if not re.search(r'\b%s\(' % f, synopsis):
            error('numapage.3: %s() is not in the SYNOPSIS' % f)
        if not re.search(r'\b%s\(\)' % f, rest):
            error('numapage.3: %s() is not described (no "%s()" after the SYNOPSIS)' % (f, f))
    for m in macros + types:
        if not re.search(r'\b%s\b' % m, synopsis):
            error('numapage.3: %s is not in the SYNOPSIS' % m)
    links = re.findall(r"^\s*'(numa_page_\w+)',?\s*$", open(meson_build).read(), re.M)
    if sorted(links) != sorted(funcs):
        error('%s: man3 links %s, header functions %s (missing: %s; extra: %s)' % (
            meson_build, len(links), len(funcs), sorted(set(funcs) - set(links)),
            sorted(set(links) - set(funcs))))

    # numapage(7)
    text7 = render(page7, plain=True)[0]
    s7 = sections(text7)
    env_items = items(s7.get('ENVIRONMENT', ''))
    p = subprocess.run([numapage, 'options'], capture_output=True, text=True, timeout=60)
    # NUMAPAGE_BIND=preferred  (default preferred; numa_page_option_set can change it)
    opts = re.findall(r'^(NUMAPAGE_\w+)=.*?  \((?:set by \S+; )?default (.*?)'
                      r'(?:; numa_page_option_set can change it)?\)$', p.stdout, re.M)
    if p.returncode != 0 or not opts or \
            len(opts) != len(re.findall(r'^NUMAPAGE_', p.stdout, re.M)):
        sys.exit('FAILED: cannot read `numapage options`:\n' + p.stdout + p.stderr)
    for name, deflt in opts:
        if name not in env_items:
            error('numapage.7: option %s is not an item of ENVIRONMENT' % name)
        elif 'Default: %s' % deflt not in env_items[name]:
            error('numapage.7: %s does not say "Default: %s": %s' % (name, deflt, env_items[name]))
    documented = {k for k in env_items if k.startswith('NUMAPAGE_')}
    # NUMAPAGE_CONF is the string of all of them, not an option of its own.
    for extra in sorted(documented - {n for n, _ in opts} - {'NUMAPAGE_CONF'}):
        error('numapage.7: %s is documented but `numapage options` does not list it' % extra)
    if 'NUMAPAGE_CONF' not in env_items:
        error('numapage.7: NUMAPAGE_CONF is not an item of ENVIRONMENT')
    stat_items = items(s7.get('STATISTICS', ''))
    for name, kind in stats:
        if name not in stat_items or not stat_items[name]:
            error('numapage.7: counter %s is not an item of STATISTICS' % name)
        elif kind in ('GAUGE', 'BYTE_GAUGE', 'COUNT_GAUGE') and not stat_items[name].startswith('(a level'):
            error('numapage.7: %s is a gauge; its item should start "(a level"' % name)
    for extra in sorted(set(stat_items) - {n for n, _ in stats}):
        error('numapage.7: STATISTICS has an item %s that is not a counter' % extra)

    # numapage(1)
    text1 = render(page1, plain=True)[0]
    s1 = sections(text1)
    body1 = text1
    h = subprocess.run([numapage, '--help'], capture_output=True, text=True, timeout=60)
    cmds = re.findall(r'^\s+numapage (\w+)', h.stdout, re.M)
    if h.returncode != 0 or not cmds:
        sys.exit('FAILED: cannot read `numapage --help`:\n' + h.stdout + h.stderr)
    for opt in ('--version', '-h', '--help'):
        if not re.search(r'(?<![\w-])%s(?![\w-])' % re.escape(opt), s1.get('SYNOPSIS', '')):
            error('numapage.1: numapage %s is not in the SYNOPSIS' % opt)
    for cmd in cmds:
        if not re.search(r'^   numapage %s$' % cmd, s1.get('DESCRIPTION', ''), re.M):
            error('numapage.1: no subsection "numapage %s" in DESCRIPTION' % cmd)
        if not re.search(r'^\s*numapage %s\b' % cmd, s1.get('SYNOPSIS', ''), re.M):
            error('numapage.1: numapage %s is not in the SYNOPSIS' % cmd)
        c = subprocess.run([numapage, cmd, '--help'], capture_output=True, text=True, timeout=60)
        usage = c.stdout + c.stderr
        if c.returncode != 0 or 'usage' not in usage and cmd != 'options':
            error('numapage %s --help: exit %d: %s' % (cmd, c.returncode, usage))
            continue
        if cmd == 'options':
            continue  # prints the option list, documented in numapage(7)
        for opt in sorted(set(re.findall(r'(?<![\w-])(--?[a-z][a-z-]*)', usage))):
            # Each option must be documented in its subcommand's subsection.
            sub = re.search(r'^   numapage %s\n(.*?)(?=^   \S|\Z)' % cmd, s1.get('DESCRIPTION', ''),
                            re.M | re.S)
            if not sub or not re.search(r'(?<![\w-])%s(?![\w-])' % re.escape(opt), sub.group(1)):
                error('numapage.1: option %s of numapage %s is not described under "numapage %s"'
                      % (opt, cmd, cmd))
    env1 = items(s1.get('ENVIRONMENT', ''))
    for root, _, files in os.walk(tools):
        for f in files:
            if f.endswith('.c'):
                for var in re.findall(r'getenv\("(\w+)"\)', open(os.path.join(root, f)).read()):
                    if var not in env1:
                        error('numapage.1: %s (read by tools/%s) is not in ENVIRONMENT' % (var, f))
    if 'SEE ALSO' not in s1 or 'numapage(7)' not in body1:
        error('numapage.1: no SEE ALSO numapage(7)')
    if not errors:
        print('%d functions, %d macros and types, %d options, %d counters, %d subcommands: all '
              'documented' % (len(funcs), len(macros) + len(types), len(opts), len(stats), len(cmds)))


if __name__ == '__main__':
    if sys.argv[1] == 'lint':
        lint(sys.argv[2:])
    else:
        coverage(*sys.argv[2:])
    if errors:
        sys.exit('FAILED:\n  ' + '\n  '.join(errors))
    print('ok')
