#!/usr/bin/env python3
"""Checks that libpeat exports exactly its public C API.

Three sets must be equal:
  * every function declared with PEAT_API in include/peat/*.h,
  * every symbol listed in lib/libpeat.map,
  * every function symbol libpeat.so exports (nm -D --defined-only).
It also checks the SONAME is libpeat.so.<abi> and that each exported symbol
carries a version from the map. Exit status 0 when all hold, 1 otherwise.
"""
import argparse
import pathlib
import re
import subprocess
import sys


def declared_functions(header_dir: pathlib.Path) -> set[str]:
    names = set()
    for header in sorted(header_dir.glob("*.h")):
        text = re.sub(r"/\*.*?\*/", " ", header.read_text(), flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        text = re.sub(r"^\s*#.*?(?<!\\)$", " ", text, flags=re.M)  # preprocessor lines
        # PEAT_API <return type> name(
        for match in re.finditer(r"\bPEAT_API\b([^;{(]*?)\b([A-Za-z_]\w*)\s*\(", text):
            names.add(match.group(2))
    names.discard("PEAT_API")
    return names


def map_symbols(map_file: pathlib.Path) -> tuple[set[str], list[str]]:
    text = re.sub(r"/\*.*?\*/", " ", map_file.read_text(), flags=re.S)
    nodes = re.findall(r"([\w.]+)\s*\{", text)
    symbols = set()
    for block in re.findall(r"global:(.*?)(?:local:|\})", text, flags=re.S):
        for symbol in re.findall(r"([A-Za-z_]\w*)\s*;", block):
            symbols.add(symbol)
    return symbols, nodes


def exported(library: pathlib.Path) -> dict[str, str]:
    out = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", str(library)],
                         check=True, capture_output=True, text=True).stdout
    symbols = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        kind, name = parts[1], parts[2]
        if kind == "A":  # version definition symbols (PEAT_0.1)
            continue
        base, _, version = name.partition("@")
        symbols[base] = version.lstrip("@")
    return symbols


def soname(library: pathlib.Path) -> str:
    out = subprocess.run(["objdump", "-p", str(library)], check=True, capture_output=True, text=True).stdout
    match = re.search(r"SONAME\s+(\S+)", out)
    return match.group(1) if match else ""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--library", required=True, type=pathlib.Path)
    parser.add_argument("--headers", required=True, type=pathlib.Path)
    parser.add_argument("--map", required=True, type=pathlib.Path)
    parser.add_argument("--abi-version", required=True)
    args = parser.parse_args()

    problems = []
    declared = declared_functions(args.headers)
    listed, nodes = map_symbols(args.map)
    exports = exported(args.library)

    for name in sorted(declared - listed):
        problems.append(f"{name}: declared PEAT_API but not listed in {args.map.name}")
    for name in sorted(listed - declared):
        problems.append(f"{name}: listed in {args.map.name} but not declared PEAT_API in any header")
    for name in sorted(declared - exports.keys()):
        problems.append(f"{name}: declared PEAT_API but not exported by {args.library.name}")
    for name in sorted(exports.keys() - declared):
        problems.append(f"{name}: exported by {args.library.name} but not part of the public API")
    for name, version in sorted(exports.items()):
        if name in declared and version not in nodes:
            problems.append(f"{name}: exported with version '{version}', not a node of {args.map.name}")
    expected_soname = f"libpeat.so.{args.abi_version}"
    if soname(args.library) != expected_soname:
        problems.append(f"SONAME is '{soname(args.library)}', expected '{expected_soname}'")
    header_abi = re.search(r"#define PEAT_ABI_VERSION (\d+)", (args.headers / "core.h").read_text())
    if not header_abi or header_abi.group(1) != args.abi_version:
        problems.append(f"PEAT_ABI_VERSION in core.h does not equal the build's ABI version {args.abi_version}")

    for problem in problems:
        print(problem)
    print(f"symbols: {len(declared)} declared, {len(listed)} listed, {len(exports)} exported; "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
