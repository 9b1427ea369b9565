"""peat.torch's view of aten calls: op schemas (argument names, what an op
writes, output names), argument trees, and the attributes a record keeps so
that a replay can rebuild the call."""
from __future__ import annotations

import math

import torch

_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
#: int-like arguments: int and, on torch 2.x, SymInt (a symbolic shape)
_INTS = (int,) + ((torch.SymInt,) if hasattr(torch, "SymInt") else ())
try:  # tensors without data (torch.compile tracing): the mode lets them pass
    from torch._subclasses.fake_tensor import FakeTensor as _FakeTensor
except ImportError:  # pragma: no cover - older torch
    _FakeTensor = ()


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


def _by_name(sigs: dict) -> dict:
    """{(name, K): sig} -> {name: sig}, or {"name K=k": sig} for a name whose
    calls have several reduction lengths (e.g. the two mm of a linear layer's
    backward), which the analyzer does not merge."""
    ks = {}
    for name, k in sigs:
        ks.setdefault(name, set()).add(k)
    return {(name if len(ks[name]) == 1 else f"{name} K={k}"): sig
            for (name, k), sig in sigs.items()}
