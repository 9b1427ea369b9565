#!/usr/bin/env python3
"""The layout rules of DESIGN.md and docs/layout.md that a build alone does not
keep (the repository root is on every include path, so these are checked here):

  1. lib/ never includes the C layer (bindings/).
  2. A project header is included by its path from the repository root
     ("lib/core/error.hpp", "backends/common/float_bits.h"); the public API is
     "peat/..." or <peat/...>. Installed headers (their includes must work from
     the install tree) and generated headers are the only exceptions.
  3. lib/<object>/ declares its code in peat::impl::<object>, lib/core and the
     C layer in peat::impl; the CLI (tools/) in peat::cli.
  4. No source file in lib/, bindings/, backends/ or tools/ is over --max-lines.
  5. No source file sets Highway's target list (HWY_WANT_*, HWY_TARGETS,
     HWY_DISABLED_TARGETS, HWY_BASELINE_TARGETS, HWY_COMPILE_*, HWY_BROKEN_*).
     The list is set once, build-wide, on hwy::hwy; the top CMakeLists.txt
     says why a file's own list breaks the others' dispatch.

Prints every violation as PATH:LINE: message and exits 1 if there is any.
"""
import argparse, os, re, sys

ap = argparse.ArgumentParser()
ap.add_argument('--root', required=True)
ap.add_argument('--max-lines', type=int, default=650)
args = ap.parse_args()
root = os.path.abspath(args.root)
trees = ['lib', 'bindings', 'backends', 'tools']
exts = ('.c', '.cc', '.cpp', '.h', '.hpp', '.cu', '.cuh', '.py')
installed = {'examples/candidates/peat_candidates.h', 'examples/candidates/peat_gemm_kernel.h',
             'backends/interpose/peat_interpose.h'}
generated = {'lib/trace/trace_generated.h'}
include = re.compile(r'^\s*#\s*include\s+([<"])([^>"]+)[>"]')
hwy_targets = re.compile(r'^\s*#\s*(define|undef)\s+(HWY_WANT_\w+|HWY_TARGETS|HWY_DISABLED_TARGETS|'
                         r'HWY_BASELINE_TARGETS|HWY_COMPILE_\w+|HWY_BROKEN_\w+)\b')
opened = re.compile(r'^\s*namespace\s+([A-Za-z_][\w:]*)\s*\{')
errors = []

def sources():
    for tree in trees:
        for d, dirs, files in os.walk(os.path.join(root, tree)):
            dirs[:] = [x for x in dirs if x not in ('__pycache__',)]
            for f in sorted(files):
                if f.endswith(exts):
                    p = os.path.join(d, f)
                    yield p, os.path.relpath(p, root)

for path, rel in sources():
    with open(path, encoding='utf-8') as fh:
        lines = fh.read().split('\n')
    if len(lines) - 1 > args.max_lines:
        errors.append(f'{rel}:1: {len(lines) - 1} lines, over {args.max_lines}: split it into files with one job each')
    if rel.endswith('.py'):
        continue
    obj = rel.split('/')[1] if rel.startswith('lib/') and rel.count('/') >= 2 else None
    for n, line in enumerate(lines, 1):
        m = hwy_targets.match(line)
        if m:
            errors.append(f'{rel}:{n}: {m.group(2)} set in one file; Highway\'s target list is set build-wide '
                          f'on hwy::hwy (top CMakeLists.txt)')
        m = include.match(line)
        if m:
            kind, name = m.groups()
            if rel.startswith('lib/') and (name.startswith('bindings/') or '/bindings/' in name):
                errors.append(f'{rel}:{n}: lib/ includes the C layer ({name})')
            if kind == '"' and rel not in installed and not name.startswith('peat/') and name not in generated \
                    and not name.endswith('_generated.h'):
                if not os.path.isfile(os.path.join(root, name)):
                    errors.append(f'{rel}:{n}: "{name}" is not a path from the repository root')
        m = opened.match(line)
        if m and m.group(1).startswith('peat'):
            ns = m.group(1)
            if obj is not None and obj != 'core':
                ok = ns.startswith(f'peat::impl::{obj}') or (ns.startswith('peat::impl::') and ns.count('::') >= 2) \
                     or ns.startswith('peat::fb')
                # another object's namespace is only reopened for a forward declaration
                if ns != f'peat::impl::{obj}' and not ns.startswith(f'peat::impl::{obj}::') and ok:
                    body = lines[n:n + 8]
                    if not any(re.match(r'^\s*}', b) for b in body):
                        ok = False
                if not ok:
                    errors.append(f'{rel}:{n}: lib/{obj}/ code belongs in peat::impl::{obj}, not {ns}')
            elif obj == 'core' or rel.startswith('bindings/c/'):
                if not ns.startswith('peat::impl'):
                    errors.append(f'{rel}:{n}: lib/core and bindings/c code belongs in peat::impl, not {ns}')
            elif rel.startswith('tools/') and not ns.startswith('peat::cli'):
                errors.append(f'{rel}:{n}: CLI code belongs in peat::cli, not {ns}')

for e in errors:
    print(e)
print(f'layout: {len(errors)} violation(s)')
sys.exit(1 if errors else 0)
