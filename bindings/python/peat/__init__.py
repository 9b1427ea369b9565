"""PEAT for Python: the C library's objects over ctypes.

    import peat
    with peat.Session(seed=1) as s, peat.Profiler(s, "run.peat") as prof:
        prof.record_op("aten::mm", inputs=[a, b], outputs=[c])
    sig = peat.analyze(golden, candidate, reduction_length=k)
    print(sig.max_rel_error, sig.mantissa_bits, sig.to_dict())

libpeat is found through PEAT_LIBRARY, next to this package, in the prefix
it was installed into (cmake --install), in the build tree of a source
checkout, then on the system. `peat.torch` (imported
separately) adds the PyTorch dispatch mode.
"""
from __future__ import annotations

from ctypes import byref, c_double, c_int32

from . import _capi
from ._capi import lib, library_path
from ._tensor import View, view
from .analyzer import (Aggregator, SeriesPoint, Signature, SpatialMap, analyze,
                       analyze_accumulate, compare_checkpoints, compare_loss,
                       default_tolerance, empty_spatial_map, make_config,
                       spatial_map_shape)
from .backend import Backend, Device
from .detector import (Detection, Verdict, detect, float_format_name, op_context, op_family,
                       op_kind_name, op_kind_of,
                       reduction_length_of, verdict_table)
from .errors import (BadStateError, BufferTooSmallError, CallbackFailedError, CancelledError,
                     CorruptDataError, InternalError, InvalidArgumentError, NotFoundError,
                     OutOfMemoryError, PeatError, PeatIOError, PeatTimeoutError,
                     ShapeMismatchError, UnavailableError, UnsupportedError, VersionMismatchError,
                     check, error_class)
from .impact import (INSIDE_NOISE, OUTSIDE_NOISE, Impact, NoiseBand, golden_reruns,
                     param_drift, seed_everything)
from .injector import (Firing, InjectSpec, Injector, Truth, action_name, error_model_name,
                       inject, round_value)
from .playback import Playback, PlaybackCall
from .profiler import Profiler
from .report import Report
from .session import Session
from .trace import Record, TensorInfo, TraceReader

__version__ = "0.2.0"


def version() -> str:
    """Version string of the loaded library."""
    return lib.peat_version_string().decode()


def version_number() -> int:
    return lib.peat_version_number()


def abi_version() -> int:
    return lib.peat_abi_version()


def status_string(status: int) -> str:
    return lib.peat_status_string(status).decode()


def dtype_from_name(name: str) -> _capi.DLDataType:
    out = _capi.DLDataType()
    check(lib.peat_dtype_from_name(name.encode(), byref(out)), "peat_dtype_from_name")
    return out


def dtype_name(dtype) -> str:
    if isinstance(dtype, str):
        dtype = dtype_from_name(dtype)
    return lib.peat_dtype_name(dtype).decode()


def last_error_message() -> str:
    """The message of this thread's last failed call ("" when none)."""
    return lib.peat_last_error_message().decode("utf-8", "replace")


def clear_last_error() -> None:
    """Clears this thread's last-error message."""
    lib.peat_clear_last_error()


def dtype_is_supported_float(name: str) -> bool:
    """True for the float dtypes the analyzer and injector handle (f16, bf16, f32, f64)."""
    return bool(lib.peat_dtype_is_supported_float(dtype_from_name(name)))


def dtype_size(name: str) -> int:
    return lib.peat_dtype_size(dtype_from_name(name))


def mantissa_bits(name: str) -> tuple:
    """(stored mantissa bits, unit roundoff) of a float dtype name."""
    bits, u = c_int32(), c_double()
    check(lib.peat_dtype_mantissa_bits(dtype_from_name(name), byref(bits), byref(u)),
          "peat_dtype_mantissa_bits")
    return bits.value, u.value


def numel(array) -> int:
    """Element count of an array as the library validates it (peat_tensor_numel)."""
    from ctypes import c_int64
    v = view(array)
    out = c_int64()
    check(lib.peat_tensor_numel(v.ref, byref(out)), "peat_tensor_numel")
    return out.value


__all__ = [name for name in dir() if not name.startswith("_")]
