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
from .labels import output_label  # noqa: F401  (part of peat.torch's names)
# The parts of peat.torch, one job each; their names are peat.torch's too.
from .torch_ops import (OUTPUT_NAMES, UNANNOTATED_WRITES, _FLOATS, _INTS, _FakeTensor,  # noqa: F401
                        _SCHEMAS, _attrs, _by_name, _clone_layout, _has_fake, _map,
                        _out_arguments, _output_items, _tensors, _unique, op_schema,
                        rebuild_args, reduction_length)
from .torch_candidates import (autocast_candidate, float64_candidate, mkldnn_candidate,  # noqa: F401
                               shared_object_candidate, threads_candidate)
from .torch_modules import _ModuleTracker, _PROBE_NODE, in_backward  # noqa: F401
from .torch_replay import _call_recorded, playback_candidate, replay, replay_candidate  # noqa: F401

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


class PeatWarning(UserWarning):
    """What peat.torch cannot see or record (a fused fast path, an op it
    cannot rebuild on replay); each is also in the session log."""


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

    def _warn(self, op: str, why: str, recorded: bool = False) -> None:
        """One PeatWarning and one session-log warning per op name: "<op> is
        not recorded: <why>", or "<op>: <why>" for a call that is recorded
        with a limit (recorded=True)."""
        if op in self.warned:
            return
        self.warned[op] = why
        text = f"peat.torch: {op}: {why}" if recorded else f"peat.torch: {op} is not recorded: {why}"
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
        if not handled:  # most calls: passed through before anything else is looked at
            tracker = self._tracker
            if (not is_view and tracker is not None and tracker.frames
                    and not (_FakeTensor and _has_fake(args))):
                tracker.note_unhandled(packet)  # views and metadata ops are not work
            return func(*args, **kwargs)
        if _FakeTensor and _has_fake(args):
            return func(*args, **kwargs)  # tracing (torch.compile): no data to record or compare
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
                           "rebuilt on replay", recorded=True)
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



# torch.distributed: rank handling, per-rank traces, the DDP all-reduce hook
# (peat/torch_distributed.py).
from .torch_distributed import (ALLREDUCE_OP, AllReduceHook, RankInfo, RankRecorder,  # noqa: E402,F401
                                distributed_playback, gather_allreduce, rank_info, rank_trace_path)

# The recording of PeatMode done in C++ (peat/torch_native.py, libpeat_torch).
from .torch_native import NativeMode, native_library  # noqa: E402,F401
