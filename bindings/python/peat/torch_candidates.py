"""Dispatch-mode candidates written in torch: candidate(func, args, kwargs)
returns what func would return, computed another way (autocast, float64,
oneDNN on or off, a C kernel from a shared object, another thread count)."""
from __future__ import annotations

import torch

from .torch_ops import _FLOATS, _map, _tensors, op_schema

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
