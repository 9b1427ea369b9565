"""PEAT inside PyTorch: a TorchDispatchMode that sees aten ops in forward and
backward, names them with the module path, records them with the profiler
(its sampling rules decide which calls), runs runtime fault injection through
the injector's schedule with candidates written in torch, and reports per-op
signatures through the analyzer.

    import peat, peat.torch as pt
    with peat.Session(seed=1) as s, peat.Profiler(s, "run.peat") as prof:
        mode = pt.PeatMode(s, model=model, profiler=prof)
        mode.set_candidate("*aten::mm", pt.autocast_candidate(torch.bfloat16))
        mode.injector.add_policy("*aten::mm", "run_both", every_n=10)
        with mode:
            for step, (x, y) in enumerate(data):
                mode.set_step(step)
                loss = F.cross_entropy(model(x), y); loss.backward(); opt.step()
        for name, sig in mode.signatures().items(): print(name, sig.mantissa_bits)

Op names are "<module path>/aten::<op>" ("conv1/aten::convolution",
"fc/aten::addmm"); ops outside any module are "aten::<op>". A candidate is a
callable candidate(func, args, kwargs) returning what func would return.
"""
from __future__ import annotations

import ctypes
import fnmatch
import math
import threading
import warnings

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .analyzer import Aggregator, analyze
from .errors import PeatError
from .impact import golden_reruns  # noqa: F401  (k golden reruns of a train function)
from ._capi import lib as _lib
from .injector import ACTION_NAMES as _ACTION_NAMES, Injector
from .session import Session
from .labels import output_label

#: The aten ops the mode handles by default (others pass through untouched).
DEFAULT_OPS = frozenset({
    "mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "convolution", "convolution_backward",
    "native_layer_norm", "native_layer_norm_backward", "_softmax", "_softmax_backward_data",
    "_log_softmax", "_log_softmax_backward_data", "embedding", "embedding_dense_backward",
    "native_batch_norm", "native_batch_norm_backward",
    # what torch 2.x and the CUDA/cuDNN paths dispatch instead (absent on 1.13's CPU path)
    "_native_batch_norm_legit", "_native_batch_norm_legit_no_training", "cudnn_batch_norm",
    "cudnn_batch_norm_backward", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
})

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
#: int-like arguments: int and, on torch 2.x, SymInt (a symbolic shape)
_INTS = (int,) + ((torch.SymInt,) if hasattr(torch, "SymInt") else ())
try:  # tensors without data (torch.compile tracing): the mode lets them pass
    from torch._subclasses.fake_tensor import FakeTensor as _FakeTensor
except ImportError:  # pragma: no cover - older torch
    _FakeTensor = ()


class PeatWarning(UserWarning):
    """What peat.torch cannot see or record (a fused fast path, an op it
    cannot rebuild on replay); each is also in the session log."""


#: Output names of multi-output ops whose schema leaves them unnamed (torch
#: 1.13 names no returns of these), so that verdicts say "grad_weight".
OUTPUT_NAMES = {
    "convolution_backward": ("grad_input", "grad_weight", "grad_bias"),
    "native_batch_norm": ("output", "save_mean", "save_invstd"),
    "native_batch_norm_backward": ("grad_input", "grad_weight", "grad_bias"),
    "native_layer_norm": ("output", "mean", "rstd"),
    "native_layer_norm_backward": ("grad_input", "grad_weight", "grad_bias"),
    "_native_batch_norm_legit": ("output", "save_mean", "save_invstd"),
    "cudnn_batch_norm": ("output", "save_mean", "save_invstd", "reserve"),
    "cudnn_batch_norm_backward": ("grad_input", "grad_weight", "grad_bias"),
}

#: Arguments ops write to without an alias annotation in their schema (torch
#: 1.13's native_batch_norm updates running_mean and running_var in training
#: mode; 2.x annotates its successor _native_batch_norm_legit).
UNANNOTATED_WRITES = {"native_batch_norm": (3, 4), "cudnn_batch_norm": (3, 4)}

_SCHEMAS = {}


def op_schema(func):
    """(argument names, positions of the arguments the op writes to, output
    names) of an aten overload, from its schema (alias annotations "a!"
    and UNANNOTATED_WRITES), cached."""
    info = _SCHEMAS.get(func)
    if info is None:
        schema = func._schema
        names = [a.name for a in schema.arguments]
        writes = {i for i, a in enumerate(schema.arguments)
                  if a.alias_info is not None and a.alias_info.is_write}
        writes |= set(UNANNOTATED_WRITES.get(func.overloadpacket.__name__, ()))
        returns = [r.name for r in schema.returns]
        table = OUTPUT_NAMES.get(func.overloadpacket.__name__)
        if table and len(table) == len(returns):
            returns = [r or t for r, t in zip(returns, table)]
        # a view or metadata op returns an alias and writes nothing (an in-place
        # op returns an alias of what it wrote: that is work)
        is_view = any(r.alias_info is not None for r in schema.returns) and not writes
        info = _SCHEMAS[func] = (names, tuple(sorted(writes)), returns, is_view)
    return info


def _out_arguments(func, kwargs) -> list:
    """The tensors of an out= overload's kwarg-only arguments that the op
    writes to (its result aliases them)."""
    outs = []
    for a in func._schema.arguments:
        if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write and a.name in kwargs:
            outs += _tensors(kwargs[a.name])
    return outs


def _output_items(out, returns):
    """[(name, tensor)] of an op's result, None results skipped, each named by
    its position's schema name ("output" / "output<i>" when unnamed)."""
    items = out if isinstance(out, (list, tuple)) else (out,)
    single = len(items) == 1
    named = []
    for i, o in enumerate(items):
        name = returns[i] if i < len(returns) and returns[i] else ("output" if single else f"output{i}")
        if isinstance(o, torch.Tensor):
            named.append((name, o))
        elif isinstance(o, (list, tuple)):
            named += [(f"{name}.{j}", t) for j, t in enumerate(_tensors(o))]
    return named


def _clone_layout(t):
    """A copy of `t` with its strides (clone() makes overlapping views
    compact, so those are copied over a buffer of their span)."""
    if t._is_view() or not t.is_contiguous():
        try:
            out = torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=t.device)
            out.copy_(t)
            return out
        except RuntimeError:  # overlapping (broadcast) strides
            pass
    return t.clone(memory_format=torch.preserve_format)


def _has_fake(args) -> bool:
    """Whether a FakeTensor is among the arguments (lists and tuples searched),
    without building a list."""
    for a in args:
        if isinstance(a, _FakeTensor):
            return True
        if isinstance(a, (list, tuple)) and a and _has_fake(a):
            return True
    return False


def _tensors(obj):
    """The tensors of an argument tree (lists and tuples flattened), in order."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        out = []
        for o in obj:
            out += _tensors(o)
        return out
    return []


def _map(obj, fn):
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(o, fn) for o in obj)
    if isinstance(obj, dict):
        return {k: _map(v, fn) for k, v in obj.items()}
    return obj


def _unique(items):
    """{name: tensor} of (name, tensor) pairs, later duplicates renamed."""
    out = {}
    for name, t in items:
        key, n = name, 1
        while key in out:
            key, n = f"{name}#{n}", n + 1
        out[key] = t
    return out


def reduction_length(name: str, args) -> int:
    """The reduction length K of an op call (0 when unknown): the inner GEMM
    dimension of mm/addmm/bmm/baddbmm, C_in/groups * kernel size of a forward
    convolution."""
    try:
        if name in ("mm", "bmm"):
            return int(args[0].shape[-1])
        if name in ("addmm", "baddbmm"):
            return int(args[1].shape[-1])
        if name == "convolution":
            w = args[1]
            return int(math.prod(w.shape[1:]))
    except (AttributeError, IndexError, TypeError):
        pass
    return 0


def _attrs(args) -> dict:
    """The non-tensor positional arguments as record attributes, so a replay
    can rebuild the call: arg<i> for ints, floats, int lists and bools (as
    ints, their positions in "bool_args"), dtypes (as "torch.float32", their
    positions in "dtype_args"); "tensor_args" the positions of the
    tensor arguments (recorded as the inputs, in order); "none_args" the
    positions of None arguments. Other arguments (layouts, devices) are not
    recorded, and calls with tensor-list arguments cannot be rebuilt."""
    out, tensors, nones, bools, dtypes = {}, [], [], [], []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            tensors.append(i)
        elif a is None:
            nones.append(i)
        elif isinstance(a, bool):
            out[f"arg{i}"] = int(a)
            bools.append(i)
        elif isinstance(a, _INTS):  # SymInt: torch 2.x symbolic shapes, concrete here
            out[f"arg{i}"] = int(a)
        elif isinstance(a, float):
            out[f"arg{i}"] = a
        elif isinstance(a, torch.dtype):
            out[f"arg{i}"] = str(a)  # "torch.float32"
            dtypes.append(i)
        elif isinstance(a, (list, tuple)) and all(isinstance(v, _INTS) for v in a):
            out[f"arg{i}"] = [int(v) for v in a]
            if a and all(isinstance(v, bool) for v in a):
                bools.append(i)
    out["tensor_args"] = tensors
    if nones:
        out["none_args"] = nones
    if bools:
        out["bool_args"] = bools
    if dtypes:
        out["dtype_args"] = dtypes
    return out


def rebuild_args(inputs, attrs: dict) -> list:
    """The positional arguments of a recorded call: the recorded input tensors
    at their positions, the recorded attributes (arg<i>) at theirs, None
    elsewhere. A record without "tensor_args" (written by other tools) gives
    the inputs alone."""
    if "tensor_args" not in attrs:
        return list(inputs)
    positions = [int(k[3:]) for k in attrs if k.startswith("arg") and k[3:].isdigit()]
    n = max(positions + list(attrs["tensor_args"]) + list(attrs.get("none_args", [])),
            default=-1) + 1
    args = [None] * n
    for pos, t in zip(attrs["tensor_args"], inputs):
        args[pos] = t
    bools, dtypes = set(attrs.get("bool_args", [])), set(attrs.get("dtype_args", []))
    for i in positions:
        v = attrs[f"arg{i}"]
        if i in bools:
            v = [bool(x) for x in v] if isinstance(v, list) else bool(v)
        elif i in dtypes:
            v = getattr(torch, v.rsplit(".", 1)[-1])
        args[i] = v
    return args


# ------------------------------------------------------------- candidates --

def autocast_candidate(dtype=torch.bfloat16):
    """A candidate computing the op with its floating inputs cast to `dtype`
    (bf16/fp16 autocast of one op) and the outputs cast back to the golden
    dtypes. float64 gives a higher-precision golden."""
    def candidate(func, args, kwargs):
        cast = lambda t: t.to(dtype) if t.dtype in _FLOATS else t  # noqa: E731
        cargs = _map(args, cast)
        out = func(*cargs, **_map(kwargs, cast))
        for i in op_schema(func)[1]:  # what the op wrote to a cast copy goes back
            if i < len(args) and isinstance(args[i], torch.Tensor) and cargs[i] is not args[i]:
                args[i].copy_(cargs[i])
        ref = [t for t in _tensors(args) if t.dtype in _FLOATS]
        back = ref[0].dtype if ref else torch.float32
        return _map(out, lambda t: t.to(back) if t.dtype in _FLOATS else t)
    candidate.__name__ = f"autocast_{str(dtype).replace('torch.', '')}"
    return candidate


def float64_candidate():
    """The op computed in float64 and rounded back: a higher-precision golden."""
    return autocast_candidate(torch.float64)


def mkldnn_candidate(enabled: bool = False):
    """The op with oneDNN (torch.backends.mkldnn) switched on or off."""
    def candidate(func, args, kwargs):
        with torch.backends.mkldnn.flags(enabled=enabled):
            return func(*args, **kwargs)
    return candidate


def shared_object_candidate(spec: str):
    """A candidate calling a C kernel with the peat_kernel_fn signature from a
    shared object, "path/libx.so:symbol" (as peat_injector_set_candidate_symbol
    takes): the kernel gets the op's tensor arguments as DLTensors (inputs, in
    order, any strides) and writes outputs allocated like the op's outputs
    (compact), with attrs NULL. Suits ops whose tensor arguments are the
    kernel's inputs, e.g. aten::mm with a GEMM kernel (C = A @ B)."""
    import ctypes

    from . import _capi
    from ._tensor import view
    path, _, symbol = spec.rpartition(":")
    if not path or not symbol:
        raise ValueError(f"peat: candidate spec {spec!r} is not 'path/libx.so:symbol'")
    fn = _capi.KERNEL_FN((symbol, ctypes.CDLL(path)))

    def candidate(func, args, kwargs):
        try:  # output shapes and dtypes without computing: the op on meta tensors
            like = _tensors(func(*_map(args, lambda t: t.to("meta")),
                                 **_map(kwargs, lambda t: t.to("meta"))))
        except Exception:
            like = _tensors(func(*args, **kwargs))
        outs = [torch.empty(t.shape, dtype=t.dtype) for t in like]
        iv, ov = [view(t) for t in _tensors(args)], [view(t) for t in outs]
        ins = (_capi.DLTensor * max(len(iv), 1))(*[v.dl for v in iv])
        outv = (_capi.DLTensor * max(len(ov), 1))(*[v.dl for v in ov])
        rc = fn(None, ins, len(iv), outv, len(ov), None)
        if rc != 0:
            raise RuntimeError(f"peat: candidate {spec} returned {rc}")
        return outs[0] if len(outs) == 1 else tuple(outs)
    candidate.__name__ = symbol
    return candidate


def threads_candidate(n: int):
    """The op run with a different intra-op thread count."""
    def candidate(func, args, kwargs):
        old = torch.get_num_threads()
        torch.set_num_threads(n)
        try:
            return func(*args, **kwargs)
        finally:
            torch.set_num_threads(old)
    return candidate


# ------------------------------------------------------------ module paths --

# A graph node made at import (outside any dispatch mode, where autograd runs);
# asking the engine about it fails unless a backward pass is running.
with torch.enable_grad():
    _PROBE_NODE = (torch.ones(1, requires_grad=True) * 2).grad_fn


def in_backward() -> bool:
    """True while the autograd engine runs a backward pass on this thread."""
    try:
        torch._C._will_engine_execute_node(_PROBE_NODE)
        return True
    except RuntimeError:
        return False


class _ModuleTracker:
    """Forward hooks keep a stack of module paths; in backward, a hook on each
    module's output tensors names the ops that follow with that module (the
    innermost module owning the tensor)."""

    def __init__(self, model, mode):
        self.stack = []
        self.frames = []  # per module on the stack: [handled ops at entry, {unhandled op names}]
        self.backward_path = ""
        self.handles = []
        for name, module in model.named_modules():
            path = name or type(module).__name__

            def pre(mod, inputs, path=path):
                if not self.stack:
                    self.backward_path = ""
                self.stack.append(path)
                self.frames.append([mode.ops_handled, set()])

            def post(mod, inputs, output, path=path):
                self.stack.pop()
                entry, unhandled = self.frames.pop()
                if mode.ops_handled == entry and unhandled:
                    mode._warn_unseen(path, type(mod).__name__, unhandled)
                for t in _tensors(output):
                    if t.requires_grad and not getattr(t, "_peat_named", False):
                        t._peat_named = True

                        def hook(grad, path=path):
                            self.backward_path = path
                            return None
                        t.register_hook(hook)

            self.handles.append(module.register_forward_pre_hook(pre))
            self.handles.append(module.register_forward_hook(post))

    def note_unhandled(self, packet: str) -> None:
        """An op the mode passed through ran inside the innermost module."""
        if self.frames:
            self.frames[-1][1].add(packet)

    def path(self, phase: str) -> str:
        if self.stack:
            return self.stack[-1]
        return self.backward_path if phase == "backward" else ""

    def remove(self):
        for h in self.handles:
            h.remove()
        self.handles.clear()


# -------------------------------------------------------------------- mode --

class PeatMode(TorchDispatchMode):
    """Intercepts aten ops (those in `ops`; default DEFAULT_OPS).

    session:   the peat.Session whose op ids, call counters and step are used.
    model:     an nn.Module whose submodules name the ops (optional).
    profiler:  a peat.Profiler: each call its sampling rules select is recorded
               (inputs, outputs, module path, phase, scalar attributes). A
               record holds what the kernel saw: the inputs with their
               strides, as they were before the op ran (the arguments the
               schema says the op writes to -- and native_batch_norm's
               running statistics, unannotated in torch 1.13 -- are copied
               first; the others are read after, unchanged), then every
               output, named (schema names or OUTPUT_NAMES: "grad_weight"),
               followed by the written arguments as the op left them.
               Sampling (Profiler.add_rule every_n) counts each call site
               apart: a site is an op name's k-th call within a step, so
               both mm calls of a Linear layer's backward are recorded.
    injector:  a peat.Injector (created on the session when not given); its
               policies decide, per call, run_golden / run_candidate / run_both
               / inject. run_candidate runs the candidate alone (its result
               propagates; no golden op and no comparison, so it costs what
               the candidate costs); run_both compares golden and candidate
               with the analyzer and keeps golden; inject applies the
               policy's error model to the golden output (output_index).
    Firings are kept in .firings (dicts), signatures per op in signatures().

    What the mode cannot record is said once per op name, as a PeatWarning
    and in the session log (.warned keeps op -> why): a module that ran
    only ops outside `ops` (a fused fast path such as
    aten::_transformer_encoder_layer_fwd in eval under no_grad, or a
    pooling op), and calls with tensor-list arguments, which are recorded
    but cannot be rebuilt on replay.
    """

    def __init__(self, session: Session, *, model=None, profiler=None, injector=None,
                 ops=DEFAULT_OPS, record_inputs: bool = True):
        super().__init__()
        self.session = session
        self.profiler = profiler
        self.injector = injector if injector is not None else Injector(session)
        self.ops = frozenset(ops)
        self.record_inputs = record_inputs
        self.phase = "forward"
        self._session_phase = None  # the phase last set on the session
        self.default_phase = "forward"  # phase of ops outside backward (set "optimizer", "other")
        self.firings = []
        self.aggregator = Aggregator()
        self._candidates = []  # (glob, candidate)
        self._op_cache = {}  # (module path, aten op) -> (op name, op id)
        self._op_ids = {}  # op name -> op id
        self._agg_ids = {}  # (op name, reduction length) -> aggregator slot
        self._candidate_cache = {}
        self.ops_seen = 0
        self.ops_handled = 0  # ops seen that are in self.ops
        self.warned = {}  # op name -> why it was not recorded (one warning each)
        self._tracker = _ModuleTracker(model, self) if model is not None else None
        self._funcs = {}  # aten overload -> (packet name, handled, is a view)
        # The per-call C calls with their out-parameters allocated once per
        # thread (the autograd engine may call the mode from its own threads).
        self._tls = threading.local()

    def _outs(self):
        tls = self._tls
        outs = getattr(tls, "outs", None)
        if outs is None:
            call, policy, flag = ctypes.c_uint64(), ctypes.c_int32(), ctypes.c_int32()
            outs = tls.outs = (call, policy, flag, ctypes.byref(call), ctypes.byref(policy),
                               ctypes.byref(flag))
        return outs

    def _decide(self, op):
        """Injector.decide_policy without per-call allocation: (action name,
        call index, policy index)."""
        call, policy, _, call_ref, policy_ref, _ = self._outs()
        action = _lib.peat_injector_decide_policy(self.injector._h, op, call_ref, policy_ref)
        if action < 0:
            return self.injector.decide_policy(op)  # raises with the library's message
        return _ACTION_NAMES.get(action, str(action)), call.value, policy.value

    def _should_record(self, op, call):
        _, _, flag, _, _, flag_ref = self._outs()
        status = _lib.peat_profiler_should_record(self.profiler._live, op, call, -1, flag_ref)
        if status != 0:
            return self.profiler.should_record(op, call)  # raises with the library's message
        return flag.value != 0

    # -- configuration --
    def set_candidate(self, op_glob: str, candidate) -> None:
        """Registers candidate(func, args, kwargs) for op names matching the glob
        (a later registration wins)."""
        self._candidates.insert(0, (op_glob, candidate))
        self._candidate_cache.clear()

    def set_step(self, step: int) -> None:
        """Starts training step `step` (a step marker in the trace when recording)."""
        if self.profiler is not None:
            self.profiler.mark_step(step)
        else:
            self.session.step = step

    def close(self) -> None:
        if self._tracker is not None:
            self._tracker.remove()
        self.aggregator.close()

    # -- results --
    def signatures(self) -> dict:
        """{op name: merged Signature} over every compared call (run_both,
        inject); an op whose calls have several reduction lengths K gets one
        entry per K, named "<op name> K=<k>"."""
        return _by_name({key: self.aggregator.signature(i) for key, i in self._agg_ids.items()})

    def detect(self, **context) -> dict:
        """{op name: peat.Detection} of signatures(): the Detector's verdicts
        on each op's merged (golden, candidate) pairs, with the op kind from
        the aten op and K from the calls (see peat.detect for `context`)."""
        from .detector import detect, op_kind_of
        out = {}
        for name, sig in self.signatures().items():
            kind = op_kind_of(name.split(" K=")[0])
            if kind in ("gemm", "conv", "reduction") and sig.reduction_length <= 0:
                kind = "unknown"
            out[name] = detect(sig, **{"op_kind": kind, **context})
        return out

    # -- the hook --
    def _candidate(self, name):
        if name not in self._candidate_cache:
            self._candidate_cache[name] = next(
                (c for g, c in self._candidates if fnmatch.fnmatchcase(name, g)), None)
        return self._candidate_cache[name]

    def _warn(self, op: str, why: str) -> None:
        """One PeatWarning and one session-log warning per op name."""
        if op in self.warned:
            return
        self.warned[op] = why
        text = f"peat.torch: {op} is not recorded: {why}"
        self.session.log(text, "warning")
        warnings.warn(text, PeatWarning, stacklevel=3)

    def _warn_unseen(self, path: str, module_type: str, packets) -> None:
        for packet in sorted(packets):
            if packet.startswith("_"):
                why = (f"module '{path}' ({module_type}) ran it, a fused fast path, and no op "
                       "the mode records (torch fuses such modules in eval under no_grad; "
                       "in training they run as ops the mode records)")
            else:
                why = (f"module '{path}' ({module_type}) ran it and no op the mode records "
                       f"(add '{packet}' to ops= to record it)")
            self._warn(f"aten::{packet}", why)

    def _func_info(self, func):
        """(overload packet name, handled, is a view or metadata op) of an aten
        overload, decided once per overload: the idle path then costs one dict
        lookup per call, no string or list built."""
        packet = func.overloadpacket.__name__
        info = self._funcs[func] = (packet, packet in self.ops, op_schema(func)[3])
        return info

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        info = self._funcs.get(func)
        if info is None:
            info = self._func_info(func)
        packet, handled, is_view = info
        if _FakeTensor and _has_fake(args):
            return func(*args, **kwargs)  # tracing (torch.compile): no data to record or compare
        if not handled:
            if not is_view and self._tracker is not None and self._tracker.frames:
                self._tracker.note_unhandled(packet)  # views and metadata ops are not work
            return func(*args, **kwargs)
        self.ops_seen += 1
        self.ops_handled += 1
        tracker = self._tracker
        if tracker is not None and tracker.stack:  # inside a module's forward
            self.phase, path = "forward", tracker.stack[-1]
        else:
            self.phase = "backward" if in_backward() else self.default_phase
            path = tracker.path(self.phase) if tracker is not None else ""
        if self.phase != self._session_phase:  # policies' phase masks read the session's
            self.session.phase = self._session_phase = self.phase
        key = (path, packet)
        entry = self._op_cache.get(key)
        if entry is None:
            name = f"{path}/aten::{packet}" if path else f"aten::{packet}"
            entry = self._op_cache[key] = (name, self.session.intern(name))
            self._op_ids[name] = entry[1]
        name, op = entry
        action, call, policy = self._decide(op)
        recording = self.profiler is not None and self._should_record(op, call)
        if recording:  # inputs as the kernel reads them: before it runs
            ins, writes = self._inputs_before(func, args, name)
        if action == "run_candidate":  # the candidate alone (the golden only if it fails)
            out = self._run_candidate(func, args, kwargs, name, call, policy)
            self._log_firing(self.firings[-1])
        else:
            before = None
            if action == "run_both":
                # the arguments the op writes to (running statistics), as the golden
                # found them: the candidate starts from the same state
                before = {i: _clone_layout(args[i]) for i in op_schema(func)[1]
                          if i < len(args) and isinstance(args[i], torch.Tensor)}
            out = func(*args, **kwargs)
            if action != "run_golden":
                out = self._fire(func, args, kwargs, name, op, call, policy, action, packet, out,
                                 before)
                self._log_firing(self.firings[-1])
        if recording:
            self._record(func, args, name, op, call, path, ins, writes, out)
        return out

    def _inputs_before(self, func, args, name):
        """([(name, tensor)] of the call's tensor arguments, in order, and the
        positions of those the op writes to). Only the ones it writes to are
        copied, before it runs; the others are read after, unchanged."""
        names, writes, _, _ = op_schema(func)
        ins, written = [], []
        for i, a in enumerate(args):
            arg = names[i] if i < len(names) else f"arg{i}"
            if isinstance(a, torch.Tensor):
                if a.is_sparse:
                    continue
                if i in writes:
                    written.append(i)
                    a = _clone_layout(a)
                ins.append((arg, a))
            elif isinstance(a, (list, tuple)) and any(isinstance(t, torch.Tensor) for t in a):
                self._warn(name, "a tensor-list argument: the call is recorded but cannot be "
                           "rebuilt on replay")
                ins += [(f"{arg}.{j}", t) for j, t in enumerate(_tensors(a))]
        return (ins if self.record_inputs else []), written

    def _record(self, func, args, name, op, call, path, ins, writes, out):
        """Records the call: the inputs as read, every output (named), and
        after them the arguments the op wrote to, as it left them. A strided
        device tensor goes through a host copy with its strides (the
        profiler stages only contiguous device tensors)."""
        names, _, returns, _ = op_schema(func)
        outs = _output_items(out, returns) + [(names[i], args[i]) for i in writes]
        host = lambda items: [(n, t.cpu() if t.device.type != "cpu" and not t.is_contiguous() else t)  # noqa: E731
                              for n, t in items]
        ins, outs = host(ins), host(outs)
        attrs = _attrs(args)
        if writes:
            attrs["written_args"] = list(writes)
        self.profiler.record_op(op, inputs=_unique(ins), outputs=_unique(outs), module_path=path,
                                phase=self.phase, call=call, attrs=attrs)

    def _run_candidate(self, func, args, kwargs, name, call, policy):
        """run_candidate: the candidate's result propagates and nothing else
        runs -- no golden op, no comparison (run_both compares) -- so a
        firing costs what the candidate costs. A missing or failing
        candidate, or one whose outputs do not have the op's shapes, falls
        back to the golden op, and the firing's status says why."""
        firing = {"op": name, "call": call, "step": self.session.step, "phase": self.phase,
                  "action": "run_candidate", "policy": policy, "status": "ok", "signature": None}
        self.firings.append(firing)
        candidate = self._candidate(name)
        if candidate is None:
            firing["status"] = "no candidate"
            return func(*args, **kwargs)
        writes = [i for i in op_schema(func)[1] if i < len(args) and isinstance(args[i], torch.Tensor)]
        before = {i: _clone_layout(args[i]) for i in writes}  # restored if the candidate fails
        try:
            cand = candidate(func, args, kwargs)
        except Exception as exc:
            firing["status"] = f"candidate failed: {exc!r}"
            cand = None
        if cand is not None:
            try:  # the op's output shapes without computing it: the op on meta tensors
                like = _tensors(func(*_map(args, lambda t: t.to("meta")),
                                     **_map(kwargs, lambda t: t.to("meta"))))
            except Exception:
                like = None
            cs = _tensors(cand)
            if like is not None and (len(like) != len(cs)
                                     or any(g.shape != c.shape for g, c in zip(like, cs))):
                firing["status"] = "candidate output shapes differ"
                cand = None
        if cand is None:
            for i, t in before.items():
                args[i].copy_(t)
            return func(*args, **kwargs)
        targets = _out_arguments(func, kwargs)
        if targets:  # an out= overload: its result lives in the out tensors
            for t, c in zip(targets, _tensors(cand)):
                if c is not t:
                    t.copy_(c)
            return targets[0] if len(targets) == 1 else tuple(targets)
        return cand

    def _fire(self, func, args, kwargs, name, op, call, policy, action, packet, golden,
              before=None):
        firing = {"op": name, "call": call, "step": self.session.step, "phase": self.phase,
                  "action": action, "policy": policy, "status": "ok", "signature": None}
        self.firings.append(firing)
        k = reduction_length(packet, args)
        if action == "inject":
            outs = _tensors(golden)
            before = [t.clone() for t in outs]
            idx = self._policy_output(policy)
            try:
                truth = self.injector.inject(policy, op, call, outs[idx])
                firing["truth"] = truth.to_dict()
                self._compare(op, call, before[idx], outs[idx], k, firing)
            except (PeatError, IndexError) as exc:
                firing["status"] = f"error: {exc}"
            return golden
        candidate = self._candidate(name)
        if candidate is None:
            firing["status"] = "no candidate"
            return golden
        cargs, ckwargs = args, kwargs
        if before:  # the candidate writes into copies of the pre-call state
            cargs = tuple(before.get(i, a) for i, a in enumerate(args))
        if _out_arguments(func, kwargs):  # out=: the candidate writes copies, golden's stay
            ckwargs = {k: (_map(v, lambda t: torch.empty_like(t)) if k == "out" else v)
                       for k, v in kwargs.items()}
        try:
            cand = candidate(func, cargs, ckwargs)
        except Exception as exc:  # the golden result stays
            firing["status"] = f"candidate failed: {exc!r}"
            return golden
        gs, cs = _tensors(golden), _tensors(cand)
        if len(gs) != len(cs) or any(g.shape != c.shape for g, c in zip(gs, cs)):
            firing["status"] = "candidate output shapes differ"
            return golden
        for g, c in zip(gs, cs):
            if g.dtype in _FLOATS and c.dtype in _FLOATS:
                self._compare(op, call, g, c, k, firing)
                break
        return golden

    def _log_firing(self, firing):
        """Each firing goes to the session's log (peat_session_log): info when
        it went as planned, warning when the golden result had to be kept."""
        detail = ""
        if "truth" in firing:
            t = firing["truth"]
            detail = f"; {t['model']} changed {t['changed']} of {t['numel']}"
        elif firing["signature"] is not None:
            sig = firing["signature"]
            detail = (f"; {sig.value_mismatch_count} of {sig.count} differ, max rel "
                      f"{sig.max_rel_error:.3g}")
        ok = firing["status"] == "ok"
        self.session.log(f"peat.torch: {firing['action']} {firing['op']} call {firing['call']} "
                         f"step {firing['step']} ({firing['phase']}) policy {firing['policy']}: "
                         f"{firing['status']}{detail}", "info" if ok else "warning")

    def _policy_output(self, policy):
        return self.injector.policy_outputs.get(policy, 0)

    def _compare(self, op, call, g, c, k, firing):
        try:
            sig = analyze(g.detach(), c.detach(), reduction_length=k)
            firing["signature"] = sig
            key = (self.session.op_name(op), k)
            index = self._agg_ids.setdefault(key, len(self._agg_ids))
            self.aggregator.add(index, self.session.step, call, sig)
        except PeatError as exc:
            firing["status"] = f"compare failed: {exc}"


# ------------------------------------------------------------------ replay --

def replay(reader, op_glob: str, candidate=None, *, output=None, num_threads: int = 0) -> dict:
    """Plays the recorded calls of ops matching `op_glob` in a trace (a
    peat.TraceReader) back against a torch candidate and compares the
    candidate's outputs with the recorded (golden) outputs through the
    analyzer.

    candidate(op, inputs, attrs) -> tensor or tuple: `op` the recorded aten
    name ("mm"), `inputs` the recorded input tensors (torch, in order, with
    the strides they were recorded with), `attrs` the recorded attributes.
    Default: the aten op itself on the inputs; wrap it with
    `replay_candidate(...)` to run it under an autocast / float64 / oneDNN /
    thread-count candidate.
    Every output is compared (`output`: one index only). Returns {name:
    merged Signature}: the op name for a single-output op, "<op>[<output
    name>]" for each output of a multi-output one ("...convolution_backward
    [grad_weight]"), with " K=<k>" appended when an op's calls have several
    reduction lengths K."""
    candidate = candidate or replay_candidate()
    sigs = {}
    for rec in reader.records(kinds="op", op_glob=op_glob):
        packet = rec.name.rsplit("aten::", 1)[-1]
        ins = [reader.load(rec.index, "input", i, layout=True) for i in range(rec.n_inputs)]
        attrs = reader.attrs(rec.index)
        results = _tensors(candidate(packet, ins, attrs))
        wanted = range(rec.n_outputs) if output is None else [output]
        for i in wanted:
            golden = reader.load(rec.index, "output", i, as_torch=True)
            out = results[i] if i < len(results) else None
            if out is None:
                raise ValueError(f"peat: {rec.name} (record {rec.index}) gave {len(results)} "
                                 f"outputs, the record has {rec.n_outputs}")
            k = reduction_length(packet, ins)
            sig = analyze(golden, out.detach(), reduction_length=k, num_threads=num_threads)
            key = (output_label(rec.name, reader.tensor_info(rec.index, "output", i).name, i,
                                rec.n_outputs), k)
            sigs[key] = sigs[key].merge(sig) if key in sigs else sig
    return _by_name(sigs)


def _by_name(sigs: dict) -> dict:
    """{(name, K): sig} -> {name: sig}, or {"name K=k": sig} for a name whose
    calls have several reduction lengths (e.g. the two mm of a linear layer's
    backward), which the analyzer does not merge."""
    ks = {}
    for name, k in sigs:
        ks.setdefault(name, set()).add(k)
    return {(name if len(ks[name]) == 1 else f"{name} K={k}"): sig
            for (name, k), sig in sigs.items()}


def _call_recorded(packet, inputs, attrs, wrapper):
    """Runs the recorded aten op on the recorded inputs and attributes (under
    `wrapper`), the arguments it writes to copied first so that the
    recorded inputs stay as they were (a second run sees the same), and
    returns its output tensors followed by those arguments as it left
    them, in the order the record lists its outputs."""
    func = getattr(torch.ops.aten, packet).default
    args = rebuild_args(inputs, attrs)
    written = [int(i) for i in attrs.get("written_args", [])]
    for i in written:
        if isinstance(args[i], torch.Tensor):
            args[i] = _clone_layout(args[i])
    result = func(*args) if wrapper is None else wrapper(func, tuple(args), {})
    return _tensors(result) + [args[i] for i in written if isinstance(args[i], torch.Tensor)]


def replay_candidate(wrapper=None):
    """A replay candidate running the recorded aten op on the recorded inputs
    and attributes (rebuild_args); `wrapper` (a dispatch-mode candidate such
    as autocast_candidate(bf16)) changes how it runs."""
    def candidate(packet, inputs, attrs):
        return tuple(_call_recorded(packet, inputs, attrs, wrapper))
    return candidate


def playback_candidate(wrapper=None):
    """A candidate for peat.Playback (attrs "list") that runs the recorded
    aten op in torch on the recorded inputs (with their recorded strides)
    and attributes, under `wrapper`
    (a dispatch-mode candidate: autocast_candidate(bf16), float64_candidate(),
    mkldnn_candidate(False), threads_candidate(1), ...; None = the op
    itself), and writes the outputs the library compares with the recorded
    golden ones:

        peat.Playback(reader, candidate=pt.playback_candidate(pt.float64_candidate()),
                      op_glob="*aten::mm").run()
    """
    def candidate(inputs, outputs, call):
        if call is None:
            raise ValueError("peat: playback_candidate needs attrs mode 'list'")
        packet = call.op.rsplit("aten::", 1)[-1]
        ins = [t if isinstance(t, torch.Tensor) else torch.from_numpy(t) for t in inputs]
        results = _call_recorded(packet, ins, call.attrs, wrapper)
        if len(results) != len(outputs):
            raise ValueError(f"peat: {call.op} gave {len(results)} outputs, the record has "
                             f"{len(outputs)}")
        for out, r in zip(outputs, results):
            target = out if isinstance(out, torch.Tensor) else torch.from_numpy(out)
            target.copy_(r.detach())
        return 0
    candidate.__name__ = f"playback_{getattr(wrapper, '__name__', 'aten')}"
    return candidate


# torch.distributed: rank handling, per-rank traces, the DDP all-reduce hook
# (peat/torch_distributed.py).
from .torch_distributed import (ALLREDUCE_OP, AllReduceHook, RankInfo, RankRecorder,  # noqa: E402,F401
                                distributed_playback, gather_allreduce, rank_info, rank_trace_path)
