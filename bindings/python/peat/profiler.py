"""Recording a training run into a trace file (peat/profiler.h)."""
from __future__ import annotations

import ctypes
from ctypes import POINTER, byref, c_char_p, c_int32, c_uint64, c_void_p

from . import _capi
from ._capi import lib
from ._handle import ClosesOnExit
from ._tensor import view
from .errors import BadStateError, check
from .session import Session, phase_code

CALL_NEXT = 2**64 - 1


def _b(s):
    return s.encode() if isinstance(s, str) else s


def _tensor_list(tensors):
    """(views, names) from a list of arrays or a {name: array} dict."""
    if tensors is None:
        return [], None
    if isinstance(tensors, dict):
        return [view(t) for t in tensors.values()], [_b(k) for k in tensors]
    return [view(t) for t in tensors], None


def _ptr_array(views):
    arr = (POINTER(_capi.DLTensor) * max(len(views), 1))()
    for i, v in enumerate(views):
        arr[i] = ctypes.pointer(v.dl)
    return arr


def _attrs(attrs: dict):
    """A peat_attr_t array (and what keeps its memory alive) from a dict of
    int / float / str / sequence-of-int values."""
    keep = []
    arr = (_capi.Attr * max(len(attrs), 1))()
    for i, (key, value) in enumerate(attrs.items()):
        a = arr[i]
        a.key = _b(key)
        if isinstance(value, bool) or isinstance(value, int):
            a.type, a.i = 0, int(value)
        elif isinstance(value, float):
            a.type, a.f = 1, value
        elif isinstance(value, str):
            a.type, a.s = 2, value.encode()
        else:
            ints = (ctypes.c_int64 * max(len(value), 1))(*[int(v) for v in value])
            keep.append(ints)
            a.type, a.ints, a.n_ints = 3, ints, len(value)
    return arr, keep


class Profiler(ClosesOnExit):
    """Records op invocations, checkpoints, scalars and step markers of a
    session into a trace file. Use as a context manager (closes the file)."""

    _h = None  # the C handle; None until created, after close

    def __init__(self, session: Session, path, *, codec: str = "shuffle_zstd",
                 framework: str = "", device: str | None = None, vendor: str | None = None,
                 tags: dict | None = None, zstd_level: int = 1, queue_bytes: int | None = None,
                 drop_when_full: bool = False, default_record: bool = True,
                 byte_budget: int = 0, content_index_entries: int | None = None):
        """content_index_entries: how many recorded tensor contents the
        profiler remembers so that a repeated tensor is stored once, as a
        reference (trace format 1.2); 0 stores every tensor in its record.
        None keeps the library's default (65536)."""
        opts = _capi.ProfilerOptions()
        lib.peat_profiler_options_init(byref(opts))
        opts.codec = {"raw": 0, "shuffle_zstd": 1}[codec] if isinstance(codec, str) else codec
        opts.path, opts.framework = _b(str(path)), _b(framework)
        opts.device, opts.vendor = _b(device), _b(vendor)
        tags = tags or {}
        tag_arr = (_capi.ProfilerTag * max(len(tags), 1))(
            *[_capi.ProfilerTag(_b(k), _b(v)) for k, v in tags.items()])
        opts.tags, opts.n_tags = tag_arr, len(tags)
        opts.zstd_level = zstd_level
        if queue_bytes is not None:
            opts.queue_bytes = queue_bytes
        opts.full_queue_policy = 1 if drop_when_full else 0
        opts.default_record, opts.byte_budget = int(default_record), byte_budget
        if content_index_entries is not None:
            opts.content_index_entries = content_index_entries
        handle = c_void_p()
        check(lib.peat_profiler_create(session.handle, byref(opts), byref(handle)),
              "peat_profiler_create")
        self._h = handle
        self.session = session
        self.path = str(path)
        # Objects that hold this profiler's C handle (peat.torch.NativeMode):
        # closed first, so none of them outlives it.
        self._users = []
        session._children.append(self)

    @property
    def _live(self):
        """The C handle; BadStateError (as the C API's BAD_STATE) once closed."""
        if not self._h:
            raise BadStateError(f"{self.path}: the profiler is closed", BadStateError.status)
        return self._h

    def close(self) -> None:
        """Flushes, writes the index and closes the file; raises the write error if any."""
        for user in reversed(list(self._users)):
            user.close()
        if self._h:
            h, self._h = self._h, c_void_p()
            try:
                check(lib.peat_profiler_close(h), "peat_profiler_close")
            finally:
                lib.peat_profiler_destroy(h)
                if self in self.session._children:
                    self.session._children.remove(self)

    def add_rule(self, op_glob: str, *, every_n: int = 1, first_k: int = 0, step_begin: int = 0,
                 step_end: int | None = None, record: bool = True, count_by: str = "site") -> None:
        """Appends a sampling rule (the first matching rule decides): record
        1 in every_n calls of the ops matching op_glob, only calls with index
        < first_k (0 = all), only at steps in [step_begin, step_end).
        count_by "site" (default) counts each call site apart -- a site is an
        op's k-th call within a step, so the two mm calls of a Linear
        layer's backward are both recorded at any every_n (each at 1 in
        every_n steps, the sites taking turns); "call" counts the op's call
        indices (a site whose calls all have odd indices is never recorded
        at an even every_n). See peat_sample_rule_t in peat/profiler.h."""
        counts = {"site": 0, "call": 1}
        if count_by not in counts:
            raise ValueError(f"peat: count_by {count_by!r} is not 'site' or 'call'")
        r = _capi.SampleRule()
        lib.peat_sample_rule_init(byref(r))
        r.op_glob, r.every_n, r.first_k, r.record = _b(op_glob), every_n, first_k, int(record)
        r.count_by = counts[count_by]
        r.step_begin = step_begin
        if step_end is not None:
            r.step_end = step_end
        check(lib.peat_profiler_add_rule(self._live, byref(r)), "peat_profiler_add_rule")

    def should_record(self, op, call: int, step: int = -1) -> bool:
        op = self.session.intern(op) if isinstance(op, str) else op
        out = c_int32()
        check(lib.peat_profiler_should_record(self._live, op, call, step, byref(out)),
              "peat_profiler_should_record")
        return bool(out.value)

    def record_op(self, op, *, inputs=None, outputs=None, module_path: str = "",
                  phase=None, step: int = -1, call: int | None = None, attrs: dict | None = None,
                  force: bool = False) -> tuple:
        """Records one op invocation; `op` is a name or an interned id, inputs
        and outputs lists or {name: tensor} dicts. Returns (recorded, call index)."""
        op = self.session.intern(op) if isinstance(op, str) else op
        rec = _capi.OpRecord()
        lib.peat_op_record_init(byref(rec))
        rec.op = op
        rec.call_index = CALL_NEXT if call is None else call
        rec.step = step
        rec.phase = -1 if phase is None else phase_code(phase)
        rec.force = int(force)
        rec.module_path = _b(module_path)
        keep = []
        if attrs:
            arr, k = _attrs(attrs)
            keep += [arr, k]
            rec.attrs, rec.n_attrs = arr, len(attrs)
        iv, inames = _tensor_list(inputs)
        ov, onames = _tensor_list(outputs)
        ip, op_ = _ptr_array(iv), _ptr_array(ov)
        rec.inputs, rec.n_inputs = ip, len(iv)
        rec.outputs, rec.n_outputs = op_, len(ov)
        if inames:
            na = (c_char_p * len(inames))(*inames)
            keep.append(na)
            rec.input_names = na
        if onames:
            na2 = (c_char_p * len(onames))(*onames)
            keep.append(na2)
            rec.output_names = na2
        recorded, out_call = c_int32(), c_uint64()
        check(lib.peat_profiler_record_op(self._live, byref(rec), byref(recorded), byref(out_call)),
              "peat_profiler_record_op")
        return bool(recorded.value), out_call.value

    def record_checkpoint(self, name: str, tensors: dict, step: int = -1) -> bool:
        views = [view(t) for t in tensors.values()]
        names = (c_char_p * max(len(tensors), 1))(*[_b(k) for k in tensors])
        recorded = c_int32()
        check(lib.peat_profiler_record_checkpoint(self._live, _b(name), step, names,
                                                  _ptr_array(views), len(views), None,
                                                  byref(recorded)),
              "peat_profiler_record_checkpoint")
        return bool(recorded.value)

    def record_scalar(self, name: str, value: float, step: int = -1) -> None:
        check(lib.peat_profiler_record_scalar(self._live, _b(name), step, float(value)),
              "peat_profiler_record_scalar")

    def mark_step(self, step: int) -> None:
        check(lib.peat_profiler_mark_step(self._live, step), "peat_profiler_mark_step")

    def flush(self) -> None:
        check(lib.peat_profiler_flush(self._live), "peat_profiler_flush")

    def stats(self) -> dict:
        s = _capi.ProfilerStats()
        s.struct_size = ctypes.sizeof(s)
        check(lib.peat_profiler_stats(self._live, byref(s)), "peat_profiler_stats")
        return {f[0]: getattr(s, f[0]) for f in s._fields_ if f[0] != "struct_size"}
