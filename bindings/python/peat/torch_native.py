"""peat.torch.NativeMode: PeatMode's recording done in C++ (libpeat_torch.so,
bindings/torch/peat_torch.h), for training runs where a Python dispatch mode
costs too much.

    import peat, peat.torch as pt
    with peat.Session() as s, peat.Profiler(s, "run.peat") as prof:
        prof.add_rule("*", every_n=10)
        with pt.NativeMode(s, model=model, profiler=prof) as mode:
            for step, (x, y) in enumerate(data):
                mode.set_step(step)
                loss = F.cross_entropy(model(x), y); loss.backward(); opt.step()

A Python TorchDispatchMode makes torch call Python for every aten op while
it is active: about 10 % of a ResNet-18 training step on torch 1.13 before
PEAT does anything. NativeMode handles the chosen ops in a C++ kernel on
torch's ADInplaceOrView key (right below autograd), and the rest of torch
runs untouched. The kernels are registered at the first entry and stay for
the rest of the process (torch does not support removing them while other
threads may call the ops); with no mode entered they pass each call on
(about 0.05 us per call of those ops). Enter the first NativeMode before
starting threads that run the handled ops. Its records are PeatMode's:
the same op names ("layer1.0.conv1/aten::convolution"), inputs as the kernel
read them, named outputs, written arguments, attributes, phase and module
path, so peat.torch.replay and Playback read them alike.

What it does not do (use PeatMode): fault injection and candidates (set a
policy or a candidate and PeatMode runs it), the warning for modules that ran
only unhandled ops (a tensor-list argument is warned about as PeatMode does,
in the session log at once and as a PeatWarning when the mode is left),
in-place, view and out= ops and torch's _foreach_
ops (the key is not theirs to take), ops under torch.inference_mode (torch
skips the key there). Like a dispatch mode, it sees the ops of the thread
that entered it and of backward passes (the autograd engine's threads), not
those of other threads. Backward ops take the module whose forward created
the autograd node that runs them (torch's sequence numbers); no tensor hooks
are added.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
import warnings
from ctypes import POINTER, byref, c_char_p, c_int32, c_int64, c_uint32, c_uint64, c_void_p
from pathlib import Path

import torch

from . import _capi
from .errors import BadStateError, UnavailableError, VersionMismatchError, error_class
from .session import Session, phase_code
from .torch_ops import OUTPUT_NAMES, UNANNOTATED_WRITES


class _OpSpec(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("op", c_char_p), ("output_names", POINTER(c_char_p)),
                ("n_output_names", c_uint32), ("extra_writes", POINTER(c_int64)),
                ("n_extra_writes", c_uint32)]


class _Stats(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("ops_handled", c_uint64), ("ops_recorded", c_uint64),
                ("ops_unnamed_backward", c_uint64)]


_PROTOTYPES = {
    "peat_torch_hook_attach": (c_int32, [c_void_p, c_void_p, POINTER(_OpSpec), c_uint64, c_int32,
                                         POINTER(c_void_p)]),
    "peat_torch_hook_detach": (None, [c_void_p]),
    "peat_torch_path_intern": (c_int32, [c_void_p, c_char_p, POINTER(c_uint32)]),
    "peat_torch_module_enter": (None, [c_void_p, c_uint32]),
    "peat_torch_module_exit": (None, [c_void_p]),
    "peat_torch_module_reset": (None, [c_void_p]),
    "peat_torch_set_default_phase": (c_int32, [c_void_p, c_int32]),
    "peat_torch_hook_stats": (c_int32, [c_void_p, POINTER(_Stats)]),
    "peat_torch_last_error": (c_char_p, []),
    "peat_torch_torch_version": (c_char_p, []),
}

_LIB = None


def _candidates():
    env = os.environ.get("PEAT_TORCH_LIBRARY")
    if env:
        yield Path(env)
        return
    yield Path(_capi.library_path).resolve().parent / "libpeat_torch.so"  # beside libpeat
    found = ctypes.util.find_library("peat_torch")
    if found:
        yield Path(found)


def native_library():
    """The loaded libpeat_torch (ctypes), found through PEAT_TORCH_LIBRARY,
    beside the libpeat in use, or on the system. Raises peat.UnavailableError
    naming the places tried when it is not there (it is built only where
    libtorch-dev was found), or peat.VersionMismatchError when it was built
    against another torch major.minor than the one imported."""
    global _LIB
    if _LIB is None:
        native, found = _capi.open_first(_candidates())
        if native is None:
            raise UnavailableError("peat.torch.NativeMode: libpeat_torch not found (built with libtorch-dev; "
                                   "set PEAT_TORCH_LIBRARY to its path); tried: " + "; ".join(found),
                                   UnavailableError.status)
        _capi.bind(native, _PROTOTYPES)
        built = native.peat_torch_torch_version().decode()
        if built.split(".")[:2] != torch.__version__.split(".")[:2]:
            # another libtorch's C++ classes: its kernels would corrupt this torch
            raise VersionMismatchError(
                f"peat.torch.NativeMode: {found} was built against libtorch {built}, this torch is "
                f"{torch.__version__}; rebuild it against this torch", VersionMismatchError.status)
        _LIB = native
    return _LIB


def _check(status: int, function: str) -> None:
    if status != 0:
        message = native_library().peat_torch_last_error().decode("utf-8", "replace")
        raise error_class(status)(message or f"{function} failed ({status})", status, function)


def _specs(ops):
    """The peat_torch_op_spec_t array of `ops` and what keeps it alive."""
    keep = []
    specs = (_OpSpec * max(len(ops), 1))()
    for spec, name in zip(specs, ops):
        spec.struct_size = ctypes.sizeof(_OpSpec)
        spec.op = name.encode()
        names = OUTPUT_NAMES.get(name)
        if names:
            arr = (c_char_p * len(names))(*[n.encode() for n in names])
            keep.append(arr)
            spec.output_names, spec.n_output_names = arr, len(names)
        writes = UNANNOTATED_WRITES.get(name)
        if writes:
            arr = (c_int64 * len(writes))(*writes)
            keep.append(arr)
            spec.extra_writes, spec.n_extra_writes = arr, len(writes)
    return specs, keep


class NativeMode:
    """Records the calls of `ops` (default peat.torch.DEFAULT_OPS, those this
    torch has) from C++ while entered (`with mode:`).

    session:  the peat.Session whose op ids, call counters, step and phase
              are used.
    model:    an nn.Module whose submodules name the ops (optional): a
              forward pre-hook and a forward hook on each module tell the
              native side where forward is.
    profiler: a peat.Profiler; each call its sampling rules select is
              recorded, as PeatMode records it. None: the mode only names
              and counts (attached idle).
    record_inputs: False records outputs only.

    One NativeMode may be entered at a time in a process
    (peat.BadStateError otherwise); an op name torch does not know raises
    peat.NotFoundError, one with no overload the hook can take (in-place,
    view and out= ops keep torch's own kernel on that key) peat.UnsupportedError. default_phase names the phase of handled ops
    outside modules and backward ("forward"; set "optimizer" around an
    optimizer step). The mode detaches when the session closes.
    """

    def __init__(self, session: Session, *, model=None, profiler=None, ops=None,
                 record_inputs: bool = True):
        self._native = native_library()
        self.session = session
        self.profiler = profiler
        self.record_inputs = record_inputs
        if ops is None:
            from .torch import DEFAULT_OPS
            ops = [op for op in sorted(DEFAULT_OPS) if hasattr(torch.ops.aten, op)]
        self.ops = tuple(ops)
        self.model = model
        self._default_phase = "forward"
        self._h = None
        self._handles = []
        self._final_stats = None

    # -- lifetime --
    def __enter__(self):
        if self._h is not None:
            raise BadStateError("peat.torch.NativeMode: already entered", BadStateError.status)
        specs, keep = _specs(self.ops)
        handle = c_void_p()
        profiler = self.profiler._live if self.profiler is not None else None
        _check(self._native.peat_torch_hook_attach(self.session.handle, profiler, specs, len(self.ops),
                                                   int(self.record_inputs), byref(handle)),
               "peat_torch_hook_attach")
        del keep
        self._h = handle
        self._log_mark = self.session.log_mark()  # the hook's warnings come after this entry
        # detached before the session or the profiler closes (they free what the hook uses)
        self.session._children.append(self)
        if self.profiler is not None:
            self.profiler._users.append(self)
        try:
            self.default_phase = self._default_phase
            if self.model is not None:
                self._hook_modules(self.model)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        """Removes the module hooks and detaches the kernels (idempotent)."""
        for h in self._handles:
            h.remove()
        self._handles.clear()
        if self._h is not None:
            self._final_stats = self.stats()
            self._native.peat_torch_hook_detach(self._h)
            self._h = None
            self._warn_from_log()
        if self in self.session._children:
            self.session._children.remove(self)
        if self.profiler is not None and self in self.profiler._users:
            self.profiler._users.remove(self)

    def _hook_modules(self, model) -> None:
        native, hook = self._native, self._h
        enter, leave = native.peat_torch_module_enter, native.peat_torch_module_exit
        reset = native.peat_torch_module_reset
        for name, module in model.named_modules():
            pid = c_uint32()
            _check(native.peat_torch_path_intern(hook, (name or type(module).__name__).encode(), byref(pid)),
                   "peat_torch_path_intern")
            pid = pid.value
            if module is model:
                # the root: a forward that raised left its modules on the stack
                def pre(mod, inputs, pid=pid):
                    reset(hook)
                    enter(hook, pid)
            else:
                def pre(mod, inputs, pid=pid):
                    enter(hook, pid)
            self._handles.append(module.register_forward_pre_hook(pre))
            self._handles.append(module.register_forward_hook(lambda mod, inputs, output: leave(hook)))

    def _warn_from_log(self) -> None:
        """The warnings the hook wrote to the session log while entered
        (one per op name), raised as PeatWarning as PeatMode raises them."""
        from .torch import PeatWarning
        for level, message in self.session.logs(since=self._log_mark):
            if level == "warning" and message.startswith("peat.torch: ") and "tensor-list" in message:
                warnings.warn(message, PeatWarning, stacklevel=3)

    # -- configuration --
    @property
    def default_phase(self) -> str:
        return self._default_phase

    @default_phase.setter
    def default_phase(self, phase: str) -> None:
        code = phase_code(phase)
        if self._h is not None:
            _check(self._native.peat_torch_set_default_phase(self._h, code), "peat_torch_set_default_phase")
        self._default_phase = phase

    def set_step(self, step: int) -> None:
        """Starts training step `step` (a step marker in the trace when recording)."""
        if self.profiler is not None:
            self.profiler.mark_step(step)
        else:
            self.session.step = step

    # -- results --
    def stats(self) -> dict:
        """{"ops_handled", "ops_recorded", "ops_unnamed_backward"}: calls of the
        handled ops seen, recorded, and backward calls no module could be
        found for (named "aten::<op>"). After close: the final counts."""
        if self._h is None:
            return dict(self._final_stats or {"ops_handled": 0, "ops_recorded": 0,
                                              "ops_unnamed_backward": 0})
        s = _Stats()
        s.struct_size = ctypes.sizeof(_Stats)
        _check(self._native.peat_torch_hook_stats(self._h, byref(s)), "peat_torch_hook_stats")
        return {"ops_handled": s.ops_handled, "ops_recorded": s.ops_recorded,
                "ops_unnamed_backward": s.ops_unnamed_backward}
