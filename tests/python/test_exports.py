"""Every function libpeat exports is wrapped by the Python package (or listed,
with the reason, as making no sense in Python), and every wrapped function
has a ctypes prototype."""
import functools
import pathlib
import re
import shutil
import subprocess

import pytest

import peat
from peat import _capi

PACKAGE = pathlib.Path(peat.__file__).resolve().parent

# Exported functions the package deliberately does not call, and why.
NOT_WRAPPED: set = set()


@functools.lru_cache(maxsize=None)
def exported_functions() -> frozenset:
    """The defined function symbols of the loaded library (nm -D)."""
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) not installed")
    out = subprocess.run(["nm", "-D", "--defined-only", peat.library_path], check=True,
                         capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("T", "t", "W"):
            names.add(parts[2].split("@")[0])
    return frozenset(n for n in names if n.startswith("peat_"))


def called_functions() -> set:
    """The library functions the package's modules call (lib.<name>)."""
    names = set()
    for source in PACKAGE.glob("*.py"):
        names |= set(re.findall(r"\blib\.(peat_\w+)", source.read_text()))
    for _, init, _ in _capi._SIZE_CHECKS:  # called by name at load time
        names.add(init)
    return names


def test_every_exported_function_is_wrapped():
    exported = exported_functions()
    assert len(exported) > 100, sorted(exported)
    missing = exported - called_functions() - NOT_WRAPPED
    assert not missing, f"exported but not wrapped in Python: {sorted(missing)}"


def test_exclusions_and_calls_name_real_exports():
    exported = exported_functions()
    assert NOT_WRAPPED <= exported, sorted(NOT_WRAPPED - exported)
    unknown = called_functions() - exported
    assert not unknown, f"the package calls functions the library lacks: {sorted(unknown)}"


def test_every_called_function_has_a_prototype():
    untyped = called_functions() - set(_capi._PROTOTYPES)
    assert not untyped, f"called without a ctypes prototype: {sorted(untyped)}"
