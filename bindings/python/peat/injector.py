"""Error models, the runtime-FI scheduler and candidate dispatch (peat/injector.h)."""
from __future__ import annotations

import ctypes
import dataclasses
from ctypes import byref, c_double, c_int32, c_uint32, c_uint64, c_void_p

from . import _capi
from ._capi import lib
from ._handle import ClosesOnExit
from ._tensor import view
from .analyzer import Signature
from .errors import check
from .session import PHASE_NAMES, PHASES, Session

KINDS = {"bitflip": 0, "stuck_at": 1, "value": 2, "region": 3, "scale": 4, "transpose": 5,
         "shift": 6, "precision": 7, "ulp_noise": 8}
ACTIONS = {"run_golden": 0, "run_candidate": 1, "run_both": 2, "inject": 3}
ACTION_NAMES = {v: k for k, v in ACTIONS.items()}
ACTION_NAMES[-1] = "invalid"
_ENUMS = {
    "field": {"any": 0, "sign": 1, "exponent": 2, "mantissa": 3},
    "scope": {"all": 0, "lane": 1, "region": 2},
    "value_kind": {"zero": 0, "random": 1, "nan": 2, "pos_inf": 3, "neg_inf": 4, "constant": 5},
    "region": {"rows": 0, "columns": 1, "tiles": 2, "last_tile": 3, "remainder": 4},
    "fill": {"zeros": 0, "garbage": 1, "stale": 2, "keep": 3},
    "format": {"bf16": 0, "fp16": 1, "tf32": 2, "fp8_e4m3": 3, "fp8_e5m2": 4},
    "rounding": {"nearest_even": 0, "truncate": 1},
    "distribution": {"uniform": 0, "fixed": 1, "normal": 2},
}


def error_model_name(model: int) -> str:
    return lib.peat_error_model_name(model).decode()


def action_name(action: int) -> str:
    """The library's name of a peat_action_t code ("run_golden", ...)."""
    return lib.peat_action_name(action).decode()


class InjectSpec:
    """An error model (peat_inject_spec_t): InjectSpec("bitflip", bit=30,
    elements=[5]); enum fields take their lower-case names ("exponent",
    "bf16", ...). `elements` is a list of row-major indices."""

    def __init__(self, kind="bitflip", **fields):
        code = KINDS[kind] if isinstance(kind, str) else kind
        self.struct = _capi.InjectSpec()
        lib.peat_inject_spec_init(byref(self.struct), code)
        self._keep = []
        for key, value in fields.items():
            if key == "elements":
                arr = (ctypes.c_int64 * max(len(value), 1))(*value)
                self._keep.append(arr)
                self.struct.elements = arr
                self.struct.count = len(value)
                continue
            if key == "stale":
                v = view(value)
                self._keep.append(v)
                self.struct.stale = ctypes.pointer(v.dl)
                continue
            if key not in dict(_capi.InjectSpec._fields_) or key == "struct_size":
                raise TypeError(f"peat: unknown inject spec field {key!r}")
            if isinstance(value, str):
                value = _ENUMS[key][value]
            setattr(self.struct, key, value)


@dataclasses.dataclass
class Truth:
    """Exactly what an injection changed (peat_inject_truth_t)."""
    kind: str
    model: str
    element_bits: int
    numel: int
    selected: int
    changed: int
    new_nonfinite: int
    first_index: int
    last_index: int
    bit_flips: list
    changes: list  # [(index, old_bits, new_bits, old_value, new_value)]

    @classmethod
    def from_struct(cls, t: _capi.InjectTruth) -> "Truth":
        return cls(lib.peat_inject_kind_name(t.kind).decode(), error_model_name(t.model),
                   t.element_bits, t.numel, t.selected, t.changed, t.new_nonfinite,
                   t.first_index, t.last_index, list(t.bit_flips),
                   [(c.index, c.old_bits, c.new_bits, c.old_value, c.new_value)
                    for c in t.changes[:t.recorded]])

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["changes"] = [list(c) for c in self.changes]
        return d


def _truth():
    t = _capi.InjectTruth()
    lib.peat_inject_truth_init(byref(t))
    return t


def inject(spec: InjectSpec, tensor, *, source=None, seed: int = 0, op: int = 0,
           call: int = 0) -> Truth:
    """Applies `spec` to `tensor` (numpy array or CPU torch tensor) in place
    with the Philox key (seed, op, call); returns the ground truth."""
    t = _truth()
    tv = view(tensor)
    sv = view(source) if source is not None else None
    check(lib.peat_inject_apply(byref(spec.struct), tv.ref, sv.ref if sv else None, seed, op, call,
                                byref(t)), "peat_inject_apply")
    return Truth.from_struct(t)


def round_value(value: float, fmt: str = "bf16", rounding: str = "nearest_even",
                saturate: bool = False) -> float:
    """One value rounded to a narrow format, as the PRECISION model does."""
    out = c_double()
    check(lib.peat_inject_round_value(value, _ENUMS["format"][fmt], _ENUMS["rounding"][rounding],
                                      int(saturate), byref(out)), "peat_inject_round_value")
    return out.value


def dl_to_array(dl: _capi.DLTensor):
    """A numpy view (no copy) of a host DLTensor; bf16 comes back as a torch
    bfloat16 tensor over the same memory."""
    import numpy as np
    code, bits = dl.dtype.code, dl.dtype.bits
    bf16 = code == _capi.kDLBfloat
    np_dtype = np.dtype({(_capi.kDLFloat, 16): "float16", (_capi.kDLFloat, 32): "float32",
                         (_capi.kDLFloat, 64): "float64", (_capi.kDLBfloat, 16): "int16",
                         (_capi.kDLInt, 32): "int32", (_capi.kDLInt, 64): "int64"}[(code, bits)])
    shape = tuple(dl.shape[:dl.ndim])
    if dl.strides:
        strides = tuple(s * np_dtype.itemsize for s in dl.strides[:dl.ndim])
    else:
        strides = None
    numel = 1
    for s in shape:
        numel *= s
    base = (dl.data or 0) + dl.byte_offset
    if numel == 0:
        arr = np.empty(shape, np_dtype)
    else:
        span = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, dl.strides[:dl.ndim])) \
            if dl.strides else numel
        lo = min([0] + [(n - 1) * s for n, s in zip(shape, dl.strides[:dl.ndim]) if s < 0]) \
            if dl.strides else 0
        buf = (ctypes.c_char * (span * np_dtype.itemsize)).from_address(base + lo * np_dtype.itemsize)
        flat = np.frombuffer(buf, dtype=np_dtype)
        arr = np.lib.stride_tricks.as_strided(flat[-lo:] if lo else flat, shape, strides) \
            if strides else flat.reshape(shape)
    if bf16:
        import torch
        return torch.from_numpy(arr).view(torch.bfloat16)
    return arr


@dataclasses.dataclass
class Firing:
    """One firing of the runtime-FI schedule, as the injector's log keeps it."""
    index: int
    op: int
    op_name: str
    call: int
    step: int
    phase: str
    action: str
    policy: int
    status: int
    kept_golden: bool
    compared: bool
    elements: int
    mismatches: int
    new_nonfinite: int
    max_abs_error: float
    max_rel_error: float
    rms_error: float
    injected: int
    #: run_twice: elements whose bits differ between the candidate's two runs
    #: (-1: it did not run twice).
    rerun_mismatches: int = -1

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class Injector(ClosesOnExit):
    """The runtime fault injector of a session: policies, decisions, candidates,
    dispatch and the firing log. Use as a context manager, or call close()."""

    _h = None  # the C handle; None until created, after close

    def __init__(self, session: Session, *, max_firings_logged: int = 4096):
        opts = _capi.InjectorOptions()
        lib.peat_injector_options_init(byref(opts))
        opts.max_firings_logged = max_firings_logged
        handle = c_void_p()
        check(lib.peat_injector_create(session.handle, byref(opts), byref(handle)),
              "peat_injector_create")
        self._h = handle
        self.session = session
        self._keep = []  # callbacks and specs the library points to
        self.policy_outputs = {}  # policy index -> output_index (INJECT)
        session._children.append(self)

    def close(self) -> None:
        if self._h:
            lib.peat_injector_destroy(self._h)
            self._h = c_void_p()
            if self in self.session._children:
                self.session._children.remove(self)

    def _op(self, op):
        return self.session.intern(op) if isinstance(op, str) else op

    def add_policy(self, op_pattern: str = "*", action: str = "run_both", *, every_n: int = 1,
                   phase_offset: int = 0, probability: float = 1.0, step_begin: int = 0,
                   step_end: int = -1, first_calls: int = 0, max_firings: int = 0,
                   phases=None, spec: InjectSpec | None = None, output_index: int = 0,
                   run_twice: bool = False) -> int:
        """Adds a policy; returns its index. `phases` is a list of phase names
        (None = all). `run_twice` (run_both): the candidate runs a second
        time on the same inputs and its two runs are compared element by
        element (Firing.rerun_mismatches, firing_rerun_signature)."""
        p = _capi.InjectorPolicy()
        lib.peat_injector_policy_init(byref(p))
        p.op_pattern = op_pattern.encode()
        p.action = ACTIONS[action] if isinstance(action, str) else action
        p.every_n, p.phase_offset, p.probability = every_n, phase_offset, probability
        p.step_begin, p.step_end, p.first_calls, p.max_firings = (step_begin, step_end,
                                                                  first_calls, max_firings)
        if phases is not None:
            p.phase_mask = sum(1 << PHASES[ph] for ph in phases)
        if spec is not None:
            p.spec = ctypes.pointer(spec.struct)
        p.output_index = output_index
        p.run_twice = 1 if run_twice else 0
        out = c_uint32()
        check(lib.peat_injector_add_policy(self._h, byref(p), byref(out)),
              "peat_injector_add_policy")
        self.policy_outputs[out.value] = output_index
        return out.value

    def clear_policies(self) -> None:
        check(lib.peat_injector_clear_policies(self._h), "peat_injector_clear_policies")
        self.policy_outputs.clear()

    def _decided(self, action: int) -> str:
        if action < 0:
            check(1, "peat_injector_decide")
        return ACTION_NAMES.get(action, str(action))

    def decide(self, op) -> tuple:
        """Claims the op's next call; returns (action name, call index)."""
        call = c_uint64()
        action = lib.peat_injector_decide(self._h, self._op(op), byref(call))
        return self._decided(action), call.value

    def decide_call(self, op, call: int) -> str:
        return self._decided(lib.peat_injector_decide_call(self._h, self._op(op), call))

    def decide_policy(self, op) -> tuple:
        """(action name, call index, policy index or -1)."""
        call, policy = c_uint64(), c_int32()
        action = lib.peat_injector_decide_policy(self._h, self._op(op), byref(call), byref(policy))
        return self._decided(action), call.value, policy.value

    def inject(self, policy: int, op, call: int, tensor, stale=None) -> Truth:
        """Applies INJECT policy `policy`'s model to `tensor` in place, as dispatch would."""
        t = _truth()
        tv = view(tensor)
        sv = view(stale) if stale is not None else None
        check(lib.peat_injector_inject(self._h, policy, self._op(op), call, tv.ref,
                                       sv.ref if sv else None, byref(t)), "peat_injector_inject")
        return Truth.from_struct(t)

    def _kernel(self, fn):
        """A peat_kernel_fn calling fn(inputs, outputs) with numpy views (bf16:
        torch views); fn writes the outputs in place. An exception or a
        non-zero int return is a failure (other return values are ignored);
        an exception's last line goes to the session's log."""
        session = self.session

        def trampoline(ctx, inputs, n_in, outputs, n_out, attrs):
            try:
                ins = [dl_to_array(inputs[i]) for i in range(n_in)]
                outs = [dl_to_array(outputs[i]) for i in range(n_out)]
                rc = fn(ins, outs)
                return int(rc) if isinstance(rc, int) and not isinstance(rc, bool) else 0
            except Exception as exc:  # a failing kernel must not unwind through C
                try:
                    session.log(f"injector: Python kernel {getattr(fn, '__name__', fn)!s} "
                                f"raised {exc!r}", "warning")
                except Exception:
                    pass
                return 1
        return _capi.KERNEL_FN(trampoline)

    def set_candidate(self, op_pattern: str, fn) -> None:
        """Registers a Python candidate fn(inputs, outputs) for ops matching the glob."""
        k = self._kernel(fn)
        self._keep.append(k)
        check(lib.peat_injector_set_candidate(self._h, op_pattern.encode(), k, None),
              "peat_injector_set_candidate")

    def set_candidate_symbol(self, op_pattern: str, spec: str) -> None:
        """Registers a C candidate loaded from "path/libx.so:symbol"."""
        check(lib.peat_injector_set_candidate_symbol(self._h, op_pattern.encode(), spec.encode(),
                                                     None), "peat_injector_set_candidate_symbol")

    def dispatch(self, op, inputs, outputs, golden) -> tuple:
        """Runs `op` the way the schedule decides: golden(inputs, outputs) is
        the trusted Python kernel (same convention as candidates). inputs and
        outputs are lists of arrays (outputs written in place). Returns
        (action name, call index)."""
        iv, ov = [view(t) for t in inputs], [view(t) for t in outputs]
        ins = (_capi.DLTensor * max(len(iv), 1))(*[v.dl for v in iv])
        outs = (_capi.DLTensor * max(len(ov), 1))(*[v.dl for v in ov])
        k = self._kernel(golden)
        action, call = c_int32(), c_uint64()
        check(lib.peat_injector_dispatch(self._h, self._op(op), ins, len(iv), outs, len(ov), None,
                                         k, None, byref(action), byref(call)),
              "peat_injector_dispatch")
        return ACTION_NAMES.get(action.value, str(action.value)), call.value

    def firing_count(self) -> tuple:
        """(firings in the log, firings dropped because the log was full)."""
        n, dropped = c_uint64(), c_uint64()
        check(lib.peat_injector_firing_count(self._h, byref(n), byref(dropped)),
              "peat_injector_firing_count")
        return n.value, dropped.value

    def firing(self, index: int) -> Firing:
        f = _capi.Firing()
        f.struct_size = ctypes.sizeof(f)
        check(lib.peat_injector_firing(self._h, index, byref(f)), "peat_injector_firing")
        return Firing(index, f.op, self.session.op_name(f.op), f.call, f.step,
                      PHASE_NAMES.get(f.phase, str(f.phase)), ACTION_NAMES.get(f.action, "?"),
                      f.policy, f.status, bool(f.kept_golden), bool(f.compared), f.elements,
                      f.mismatches, f.new_nonfinite, f.max_abs_error, f.max_rel_error,
                      f.rms_error, f.injected, f.rerun_mismatches)

    def firings(self) -> list:
        return [self.firing(i) for i in range(self.firing_count()[0])]

    def firing_signature(self, index: int) -> Signature:
        s = _capi.Signature()
        lib.peat_signature_init(byref(s))
        check(lib.peat_injector_firing_signature(self._h, index, byref(s)),
              "peat_injector_firing_signature")
        return Signature.from_struct(s)

    def firing_rerun_signature(self, index: int) -> Signature:
        """The signature of the candidate's second run against its first, for
        a firing of a run_twice policy; give it to peat.detect as
        `rerun_diff` to decide non-determinism from the outputs themselves.
        NotFoundError when the firing did not run twice."""
        s = _capi.Signature()
        lib.peat_signature_init(byref(s))
        check(lib.peat_injector_firing_rerun_signature(self._h, index, byref(s)),
              "peat_injector_firing_rerun_signature")
        return Signature.from_struct(s)

    def write_log(self, path, append: bool = False) -> None:
        check(lib.peat_injector_write_log(self._h, str(path).encode(), int(append)),
              "peat_injector_write_log")
