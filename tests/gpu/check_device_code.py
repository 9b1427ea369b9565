#!/usr/bin/env python3
"""Checks which device architectures a GPU plugin carries.

usage: check_device_code.py PLUGIN.so cuda sm_80 sm_90 ptx:sm_90
       check_device_code.py PLUGIN.so hip gfx90a gfx940

CUDA: the .nv_fatbin section holds fat binaries (magic 0xBA55ED50), each a
list of entries with a kind (1 = PTX, 2 = ELF/SASS) and an SM version; this
script walks them (the layout cuobjdump --list-elf / --list-ptx reads, for
toolkits that ship no cuobjdump). HIP: the .hip_fatbin section holds clang
offload bundles (magic __CLANG_OFFLOAD_BUNDLE__) whose entry ids name the
target, e.g. hipv4-amdgcn-amd-amdhsa--gfx90a (what clang-offload-bundler
--list prints). Each expected item must be present; the script prints what
it found and exits 1 when something is missing.
"""
import os
import struct
import subprocess
import sys
import tempfile


def section(path, name):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "sec.bin")
        subprocess.run(["objcopy", "-O", "binary", "--only-section=" + name, path, out], check=True)
        with open(out, "rb") as f:
            return f.read()


def cuda_entries(blob):
    found = set()
    pos = 0
    while True:
        pos = blob.find(struct.pack("<I", 0xBA55ED50), pos)
        if pos < 0 or pos + 16 > len(blob):
            return found
        _magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", blob, pos)
        entry = pos + header_size
        end = min(len(blob), entry + fat_size)
        while entry + 32 <= end:
            kind, _ver, ehdr, padded = struct.unpack_from("<HHII", blob, entry)
            sm = struct.unpack_from("<I", blob, entry + 28)[0]
            if ehdr == 0:
                break
            found.add(("ptx:sm_%d" if kind == 1 else "sm_%d") % sm)
            entry += ehdr + padded
        pos = max(end, pos + 16)


def hip_entries(blob):
    magic = b"__CLANG_OFFLOAD_BUNDLE__"
    found = set()
    pos = 0
    while True:
        pos = blob.find(magic, pos)
        if pos < 0:
            return found
        count = struct.unpack_from("<Q", blob, pos + len(magic))[0]
        p = pos + len(magic) + 8
        for _ in range(min(count, 64)):
            _off, _size, idlen = struct.unpack_from("<QQQ", blob, p)
            ident = blob[p + 24 : p + 24 + idlen].decode("ascii", "replace")
            p += 24 + idlen
            if "amdgcn" in ident:
                found.add(ident.rsplit("-", 1)[-1].split(":")[0])
        pos += len(magic)


def main():
    if len(sys.argv) < 4 or sys.argv[2] not in ("cuda", "hip"):
        print(__doc__)
        return 2
    path, vendor, expected = sys.argv[1], sys.argv[2], sys.argv[3:]
    if vendor == "cuda":
        found = cuda_entries(section(path, ".nv_fatbin"))
    else:
        found = hip_entries(section(path, ".hip_fatbin"))
    print("%s: device code for %s" % (path, ", ".join(sorted(found)) or "nothing"))
    missing = [e for e in expected if e not in found]
    if missing:
        print("missing: " + ", ".join(missing))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
