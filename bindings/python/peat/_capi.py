"""ctypes mirror of PEAT's C ABI: library lookup, the public structs, and the
prototypes of the exported functions.

Nothing here is Pythonic; the classes in the other modules wrap it. Every
struct mirrors its C declaration field by field (include/peat/*.h); the struct
sizes are checked against the library at load time wherever the library
reports them (the *_init functions write struct_size).

The structs live in _capi_structs.py, the prototypes in _capi_prototypes.py;
this module loads the library, binds and checks it, and re-exports both, so
`from peat._capi import Signature, lib` keeps working.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char, c_char_p, c_double, c_int,  # noqa: F401
                    c_int32, c_int64, c_size_t, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p)
from pathlib import Path

from ._capi_structs import *  # noqa: F401,F403
from ._capi_prototypes import _PROTOTYPES, _SIZE_CHECKS, P, S  # noqa: F401

#: Version this package was written against (PEAT_VERSION_NUMBER / PEAT_ABI_VERSION).
EXPECTED_VERSION_NUMBER = 200
EXPECTED_ABI_VERSION = 0


class LibraryNotFound(ImportError):
    """libpeat could not be found or is not a version this package supports."""


def _candidates():
    env = os.environ.get("PEAT_LIBRARY")
    if env:
        yield Path(env)
        return
    here = Path(__file__).resolve().parent
    for name in ("libpeat.so", f"libpeat.so.{EXPECTED_ABI_VERSION}"):
        yield here / name  # next to the package
    try:  # installed by cmake --install: the prefix's library
        from . import _installed
        yield (here / _installed.LIBRARY).resolve()
    except ImportError:
        pass
    for parent in here.parents:  # the build tree of a source checkout
        build = parent / "build" / "lib"
        if (build / "libpeat.so").exists():
            yield build / "libpeat.so"
            break
    found = ctypes.util.find_library("peat")  # the system
    if found:
        yield Path(found)
    yield Path(f"libpeat.so.{EXPECTED_ABI_VERSION}")


def open_first(candidates):
    """(ctypes library, its path) of the first of `candidates` (Paths) that
    loads; (None, [why each one failed]) when none does."""
    errors = []
    for path in candidates:
        if path.is_absolute() and not path.exists():
            errors.append(f"{path}: no such file")
            continue
        try:
            return ctypes.CDLL(str(path)), str(path)
        except OSError as exc:
            errors.append(f"{path}: {exc}")
    return None, errors


def _load():
    lib, found = open_first(_candidates())
    if lib is None:
        raise LibraryNotFound("libpeat not found (set PEAT_LIBRARY to its path); tried: " +
                              "; ".join(found))
    return lib, found


def bind(lib, prototypes: dict) -> None:
    """Sets restype and argtypes of each {name: (restype, argtypes)} on `lib`."""
    for name, (restype, argtypes) in prototypes.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes


def _check(lib, path):
    version = lib.peat_version_number()
    abi = lib.peat_abi_version()
    if abi != EXPECTED_ABI_VERSION:
        raise LibraryNotFound(f"{path}: ABI version {abi}, this package needs "
                              f"{EXPECTED_ABI_VERSION}")
    # Minor releases only add (docs/abi-policy.md): a library of the same major
    # version, at least as new as this package, serves it.
    if version // 10000 != EXPECTED_VERSION_NUMBER // 10000 or version < EXPECTED_VERSION_NUMBER:
        raise LibraryNotFound(f"{path}: library version {version}, this package needs "
                              f"{EXPECTED_VERSION_NUMBER} or newer of the same major version")
    for struct, init, extra in _SIZE_CHECKS:
        s = struct()
        getattr(lib, init)(ctypes.byref(s), *extra)
        if s.struct_size != ctypes.sizeof(struct):
            raise LibraryNotFound(f"{path}: {init} reports struct_size {s.struct_size}, the "
                                  f"Python mirror {struct.__name__} has {ctypes.sizeof(struct)}")


lib, library_path = _load()
bind(lib, _PROTOTYPES)
_check(lib, library_path)
