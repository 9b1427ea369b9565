"""Reading trace files (peat/trace.h)."""
from __future__ import annotations

import ctypes
import dataclasses
from ctypes import byref, c_char_p, c_uint64, c_void_p

from . import _capi
from ._capi import lib
from ._handle import OwnsHandle
from .errors import NotFoundError, check
from .session import PHASE_NAMES, phase_code

KINDS = {"op": 1, "checkpoint": 2, "scalar": 3, "step": 4}
KIND_NAMES = {v: k for k, v in KINDS.items()}
SLOTS = {"input": 0, "output": 1, "checkpoint": 2}
CODECS = {"raw": 0, "shuffle_zstd": 1, "xor_delta_shuffle_zstd": 2}  # 2: format 1.3, chosen per tensor


@dataclasses.dataclass
class Record:
    """One record of a trace (peat_trace_record_info_t)."""
    index: int
    kind: str
    step: int
    name: str
    phase: str
    module_path: str
    call_index: int
    n_attrs: int
    n_inputs: int
    n_outputs: int
    n_tensors: int
    value: float
    unix_ns: int
    file_offset: int
    file_bytes: int

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class TensorInfo:
    name: str
    dtype: str
    shape: tuple
    numel: int
    raw_bytes: int
    encoded_bytes: int
    codec: str
    checksum: int
    #: element strides of the recorded layout; None when it was compact row-major
    strides: tuple | None = None
    storage_offset: int = 0
    #: format 1.2: (slot, tensor, record sequence number) of the stored tensor
    #: whose bytes this one shares; None when its bytes are in its own record
    reference: tuple | None = None


def _str(p) -> str:
    # The library reads and writes UTF-8 only (docs/trace-format.md, "Strings");
    # "replace" still keeps a message cut mid-character (stop_reason) readable.
    return p.decode("utf-8", "replace") if p else ""


def attr_value(at: _capi.Attr):
    """The Python value of a peat_attr_t: int, float, str or list of ints."""
    if at.type == 0:
        return at.i
    if at.type == 1:
        return at.f
    if at.type == 2:
        return _str(at.s)
    return list(at.ints[:at.n_ints]) if at.n_ints else []


def make_filter(*, kinds=None, op_glob: str | None = None, step_min: int | None = None,
                step_max: int | None = None, phase=None) -> _capi.TraceFilter:
    """A peat_trace_filter_t: record kinds ("op", "checkpoint", "scalar",
    "step"), op-name glob, step range, phase. The glob's bytes are kept alive
    by the returned struct."""
    f = _capi.TraceFilter()
    lib.peat_trace_filter_init(byref(f))
    if kinds:
        f.kinds = sum(1 << KINDS[k] for k in ([kinds] if isinstance(kinds, str) else kinds))
    if op_glob is not None:
        f._glob = op_glob.encode()
        f.op_glob = f._glob
    if step_min is not None:
        f.step_min = step_min
    if step_max is not None:
        f.step_max = step_max
    if phase is not None:
        f.phase = phase_code(phase)
    return f


class TraceReader(OwnsHandle):
    """A trace file opened for reading. `recover=True` reads a trace whose
    writer was killed (the intact records); `.recovery` then says what was
    found. Use as a context manager, or call close()."""

    _h = None  # the C handle; None until created, after close

    def __init__(self, path, *, recover: bool = False, max_tensor_bytes: int | None = None,
                 max_meta_bytes: int | None = None, max_record_bytes: int | None = None):
        opts = _capi.TraceReaderOptions()
        lib.peat_trace_reader_options_init(byref(opts))
        if max_record_bytes is not None:
            opts.max_record_bytes = max_record_bytes
        if max_tensor_bytes is not None:
            opts.max_tensor_bytes = max_tensor_bytes
        if max_meta_bytes is not None:
            opts.max_meta_bytes = max_meta_bytes
        handle = c_void_p()
        self.path = str(path)
        self.recovery = None
        if recover:
            rec = _capi.TraceRecovery()
            rec.struct_size = ctypes.sizeof(rec)
            check(lib.peat_trace_recover(self.path.encode(), byref(opts), byref(handle),
                                         byref(rec)), "peat_trace_recover")
            self.recovery = {"complete": bool(rec.complete), "records": rec.records,
                             "valid_bytes": rec.valid_bytes, "file_bytes": rec.file_bytes,
                             "stop_reason": _str(rec.stop_reason)}
        else:
            check(lib.peat_trace_open(self.path.encode(), byref(opts), byref(handle)),
                  "peat_trace_open")
        self._h = handle

    def close(self) -> None:
        if self._h:
            lib.peat_trace_close(self._h)
            self._h = c_void_p()

    def run_info(self) -> dict:
        info = _capi.TraceRunInfo()
        info.struct_size = ctypes.sizeof(info)
        check(lib.peat_trace_run_info(self._h, byref(info)), "peat_trace_run_info")
        out = {f[0]: getattr(info, f[0]) for f in info._fields_ if f[0] != "struct_size"}
        return {k: (_str(v) if isinstance(v, bytes) else v) for k, v in out.items()}

    def tags(self) -> dict:
        out = {}
        for i in range(self.run_info()["n_tags"]):
            k, v = c_char_p(), c_char_p()
            check(lib.peat_trace_tag(self._h, i, byref(k), byref(v)), "peat_trace_tag")
            out[_str(k.value)] = _str(v.value)
        return out

    def __len__(self) -> int:
        n = c_uint64()
        check(lib.peat_trace_record_count(self._h, byref(n)), "peat_trace_record_count")
        return n.value

    def record(self, index: int) -> Record:
        r = _capi.TraceRecordInfo()
        r.struct_size = ctypes.sizeof(r)
        check(lib.peat_trace_record_info(self._h, index, byref(r)), "peat_trace_record_info")
        return Record(index, KIND_NAMES.get(r.kind, str(r.kind)), r.step, _str(r.name),
                      PHASE_NAMES.get(r.phase, str(r.phase)), _str(r.module_path), r.call_index,
                      r.n_attrs, r.n_inputs, r.n_outputs, r.n_tensors, r.value, r.unix_ns,
                      r.file_offset, r.file_bytes)

    def __iter__(self):
        return self.records()

    def records(self, *, kinds=None, op_glob: str | None = None, step_min: int | None = None,
                step_max: int | None = None, phase=None):
        """Iterates the records a filter selects (peat_trace_next)."""
        f = make_filter(kinds=kinds, op_glob=op_glob, step_min=step_min, step_max=step_max,
                        phase=phase)
        i, out = 0, c_uint64()
        while True:
            status = lib.peat_trace_next(self._h, byref(f), i, byref(out))
            if status == NotFoundError.status:
                return
            check(status, "peat_trace_next")
            yield self.record(out.value)
            i = out.value + 1

    def attrs(self, index: int) -> dict:
        """The typed attributes of op record `index` as a dict."""
        out = {}
        for a in range(self.record(index).n_attrs):
            at = _capi.Attr()
            check(lib.peat_trace_attr(self._h, index, a, byref(at)), "peat_trace_attr")
            out[_str(at.key)] = attr_value(at)
        return out

    def tensor_count(self, index: int, slot: str = "output") -> int:
        n = c_uint64()
        check(lib.peat_trace_tensor_count(self._h, index, SLOTS[slot], byref(n)),
              "peat_trace_tensor_count")
        return n.value

    def tensor_info(self, index: int, slot: str = "output", tensor: int = 0) -> TensorInfo:
        t = _capi.TraceTensorInfo()
        t.struct_size = ctypes.sizeof(t)
        check(lib.peat_trace_tensor_info(self._h, index, SLOTS[slot], tensor, byref(t)),
              "peat_trace_tensor_info")
        codec = {v: k for k, v in CODECS.items()}.get(t.codec, str(t.codec))
        strides = tuple(t.strides[:t.ndim]) if t.strides else None
        slot_names = {v: k for k, v in SLOTS.items()}
        reference = ((slot_names.get(t.ref_slot, str(t.ref_slot)), t.ref_tensor, t.ref_seq)
                     if t.is_reference else None)
        return TensorInfo(_str(t.name), lib.peat_dtype_name(t.dtype).decode(),
                          tuple(t.shape[:t.ndim]), t.numel, t.raw_bytes, t.encoded_bytes, codec,
                          t.checksum, strides, t.storage_offset, reference)

    def load(self, index: int, slot: str = "output", tensor: int = 0, *, as_torch: bool = False,
             layout: bool = False):
        """Decodes a recorded tensor into a new numpy array (bf16: a torch
        tensor, as numpy has no bfloat16; as_torch=True: always torch).
        layout=True gives a torch tensor with the recorded strides (over a
        new buffer of the layout's span; compact when recorded compact), the
        view the recorded kernel read: replay it with that, because a kernel
        may round differently on another layout of the same values."""
        import numpy as np
        info = self.tensor_info(index, slot, tensor)
        if layout:
            return _with_layout(self.load(index, slot, tensor, as_torch=True), info.strides)
        np_dtype = {"f16": np.float16, "bf16": np.int16, "f32": np.float32, "f64": np.float64,
                    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
                    "u8": np.uint8, "bool": np.bool_}[info.dtype]
        arr = np.empty(info.shape, dtype=np_dtype)
        check(lib.peat_trace_load_tensor(self._h, index, SLOTS[slot], tensor,
                                         ctypes.c_void_p(arr.ctypes.data), arr.nbytes),
              "peat_trace_load_tensor")
        if info.dtype == "bf16" or as_torch:
            import torch
            t = torch.from_numpy(arr)
            return t.view(torch.bfloat16) if info.dtype == "bf16" else t
        return arr

    def load_alloc(self, index: int, slot: str = "output", tensor: int = 0):
        """As load, into memory the library allocates: a numpy array over it
        without a copy, freed when the array is garbage-collected."""
        return _load_alloc(self, index, slot, tensor)

    def verify(self) -> int:
        """Decodes and checks every tensor; returns how many were checked."""
        n = c_uint64()
        check(lib.peat_trace_verify(self._h, byref(n)), "peat_trace_verify")
        return n.value

    def skipped(self) -> tuple:
        """(count, first message) of the file's records this reader skipped."""
        n, first = c_uint64(), ctypes.c_char_p()
        check(lib.peat_trace_skipped(self._h, byref(n), byref(first)), "peat_trace_skipped")
        return n.value, _str(first.value)

    def copy_intact(self, out_path) -> tuple:
        """Writes the intact records into a new, complete trace; (written, dropped)."""
        w, d = c_uint64(), c_uint64()
        check(lib.peat_trace_copy_intact(self._h, str(out_path).encode(), byref(w), byref(d)),
              "peat_trace_copy_intact")
        return w.value, d.value


def _with_layout(compact, strides):
    """`compact` (a torch tensor) copied into a tensor of its shape with the
    element `strides` (None: returned as it is): as_strided over a zeroed
    buffer of the layout's span. Broadcast (zero) strides are written once
    per location, with one of the equal recorded values."""
    if strides is None or compact.numel() == 0:
        return compact
    import torch
    shape = tuple(compact.shape)
    if any(s < 0 for s in strides):
        raise ValueError(f"peat: recorded strides {strides} are negative; torch cannot view them")
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    buf = torch.zeros(span, dtype=compact.dtype)
    where = torch.arange(span).as_strided(shape, strides)
    buf[where.reshape(-1)] = compact.reshape(-1)
    return buf.as_strided(shape, strides)


class _ManagedArray:
    """Owns a DLManagedTensor from peat_trace_load_tensor_alloc and exposes it
    to numpy (__array_interface__); frees it (peat_trace_tensor_free) when the
    last array over it is gone."""

    _TYPESTR = {(2, 16): "<f2", (2, 32): "<f4", (2, 64): "<f8", (4, 16): "<i2",
                (0, 8): "|i1", (0, 16): "<i2", (0, 32): "<i4", (0, 64): "<i8", (1, 8): "|u1"}

    def __init__(self, managed):
        self._managed = managed
        dl = managed.contents.dl_tensor
        shape = tuple(dl.shape[:dl.ndim])
        self.bf16 = dl.dtype.code == _capi.kDLBfloat
        self.__array_interface__ = {
            "shape": shape, "typestr": self._TYPESTR[(dl.dtype.code, dl.dtype.bits)],
            "data": ((dl.data or 0) + dl.byte_offset, False), "strides": None, "version": 3}

    def __del__(self):
        if self._managed:
            lib.peat_trace_tensor_free(self._managed)
            self._managed = None


def _load_alloc(reader: TraceReader, index: int, slot: str = "output", tensor: int = 0):
    """Decodes a recorded tensor into memory the library allocates
    (peat_trace_load_tensor_alloc) and returns a numpy array over that memory,
    without a copy (bf16: a torch bfloat16 tensor over it). The memory is
    freed with peat_trace_tensor_free once the array is garbage-collected."""
    import numpy as np
    out = ctypes.POINTER(_capi.DLManagedTensor)()
    check(lib.peat_trace_load_tensor_alloc(reader._h, index, SLOTS[slot], tensor, byref(out)),
          "peat_trace_load_tensor_alloc")
    owner = _ManagedArray(out)
    arr = np.asarray(owner)
    if owner.bf16:
        import torch
        return torch.from_numpy(arr).view(torch.bfloat16)
    return arr

