"""DLTensor views of numpy arrays and torch tensors, without copies.

A View holds the DLTensor and the shape/stride arrays it points to, and a
reference to the array, so the memory stays alive while the view is used."""
from __future__ import annotations

import ctypes

from . import _capi
from ._capi import DLDataType, DLDevice, DLTensor, c_int64

_NUMPY_DTYPES = {"float16": (_capi.kDLFloat, 16), "float32": (_capi.kDLFloat, 32),
                 "float64": (_capi.kDLFloat, 64), "int8": (_capi.kDLInt, 8),
                 "int16": (_capi.kDLInt, 16), "int32": (_capi.kDLInt, 32),
                 "int64": (_capi.kDLInt, 64), "uint8": (_capi.kDLUInt, 8),
                 "bool": (_capi.kDLUInt, 8)}
_TORCH_DTYPES = {"torch.float16": (_capi.kDLFloat, 16), "torch.bfloat16": (_capi.kDLBfloat, 16),
                 "torch.float32": (_capi.kDLFloat, 32), "torch.float64": (_capi.kDLFloat, 64),
                 "torch.int8": (_capi.kDLInt, 8), "torch.int16": (_capi.kDLInt, 16),
                 "torch.int32": (_capi.kDLInt, 32), "torch.int64": (_capi.kDLInt, 64),
                 "torch.uint8": (_capi.kDLUInt, 8), "torch.bool": (_capi.kDLUInt, 8)}


class View:
    """A borrowed DLTensor over an array's memory (`.dl`, `.ref` for ctypes)."""
    __slots__ = ("dl", "_shape", "_strides", "owner")

    def __init__(self, data: int, shape, strides, code: int, bits: int, owner,
                 device_type: int = _capi.kDLCPU, device_id: int = 0):
        ndim = len(shape)
        self._shape = (c_int64 * max(ndim, 1))(*shape)
        self._strides = (c_int64 * max(ndim, 1))(*strides)
        self.owner = owner
        self.dl = DLTensor(ctypes.c_void_p(data or None), DLDevice(device_type, device_id), ndim,
                           DLDataType(code, bits, 1), self._shape, self._strides, 0)

    @property
    def ref(self):
        return ctypes.byref(self.dl)


def _torch_device(array) -> tuple:
    """(DLDeviceType, device id) of a torch tensor: CPU, or the memory of a
    CUDA / ROCm GPU (which the library hands to that device's backend)."""
    dev = array.device
    if dev.type == "cpu":
        return _capi.kDLCPU, 0
    if dev.type == "cuda":
        import torch
        kind = _capi.kDLROCM if getattr(torch.version, "hip", None) else _capi.kDLCUDA
        return kind, dev.index if dev.index is not None else torch.cuda.current_device()
    raise TypeError(f"peat: torch tensors on {dev} cannot be viewed (CPU and CUDA/ROCm only)")


def view(array) -> View:
    """A DLTensor view of a numpy array, a torch tensor or any object with
    __dlpack__ (any strides, no copy). numpy and DLPack producers must be in
    CPU memory, torch tensors in CPU or CUDA/ROCm memory (a device view is
    for the functions that take device memory: the profiler, the injector,
    peat.analyze through the device's backend); numpy strides in bytes must be
    multiples of the element size. Raises TypeError for anything else."""
    if isinstance(array, View):
        return array
    module = type(array).__module__
    if module.startswith("torch"):
        key = str(array.dtype)
        if key not in _TORCH_DTYPES:
            raise TypeError(f"peat: torch dtype {array.dtype} has no DLPack mapping here")
        device_type, device_id = _torch_device(array)
        code, bits = _TORCH_DTYPES[key]
        return View(array.data_ptr(), tuple(array.shape), tuple(array.stride()), code, bits, array,
                    device_type, device_id)
    if module == "numpy":
        name = array.dtype.name
        if name not in _NUMPY_DTYPES:
            raise TypeError(f"peat: numpy dtype {name} has no DLPack mapping here")
        code, bits = _NUMPY_DTYPES[name]
        item = array.dtype.itemsize
        if any(s % item for s in array.strides):
            raise TypeError("peat: numpy strides must be multiples of the element size")
        return View(array.ctypes.data, array.shape, tuple(s // item for s in array.strides),
                    code, bits, array)
    if hasattr(array, "__dlpack__"):  # any other DLPack producer (CPU memory), no copy
        try:
            import numpy as np
            return view(np.from_dlpack(array))
        except (ImportError, AttributeError, TypeError, RuntimeError, BufferError):
            import torch.utils.dlpack
            return view(torch.utils.dlpack.from_dlpack(array))
    raise TypeError(f"peat: expected a numpy array, a torch tensor or a DLPack producer, got "
                    f"{type(array).__name__}")
