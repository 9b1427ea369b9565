"""The backend registry (peat/backend.h): which backends are loaded and their devices."""
from __future__ import annotations

import ctypes
import dataclasses
from ctypes import byref, c_int32, c_void_p

from . import _capi
from ._capi import lib
from ._tensor import view
from .errors import UnsupportedError, check, error_class


@dataclasses.dataclass
class Device:
    device_type: int
    device_id: int
    name: str
    vendor: str
    total_memory_bytes: int
    compute_units: int


class Backend:
    """A loaded backend ("cpu" is built in; others are plugins found on
    PEAT_BACKEND_PATH or next to libpeat). Owned by the library's registry."""

    def __init__(self, handle: c_void_p):
        self._h = handle

    @classmethod
    def get(cls, name: str = "cpu") -> "Backend":
        h = c_void_p()
        check(lib.peat_backend_get(name.encode(), byref(h)), "peat_backend_get")
        return cls(h)

    @classmethod
    def load_file(cls, path) -> "Backend":
        h = c_void_p()
        check(lib.peat_backend_load_file(str(path).encode(), byref(h)), "peat_backend_load_file")
        return cls(h)

    @classmethod
    def for_device(cls, device_type: int) -> "Backend":
        h = c_void_p()
        check(lib.peat_backend_for_device(device_type, byref(h)), "peat_backend_for_device")
        return cls(h)

    @property
    def name(self) -> str:
        return lib.peat_backend_name(self._h).decode()

    @property
    def path(self) -> str:
        return lib.peat_backend_path(self._h).decode()

    @property
    def device_count(self) -> int:
        n = c_int32()
        check(lib.peat_backend_device_count(self._h, byref(n)), "peat_backend_device_count")
        return n.value

    def device(self, index: int = 0) -> Device:
        info = _capi.BackendDeviceInfo()
        info.struct_size = ctypes.sizeof(info)
        check(lib.peat_backend_device_info(self._h, index, byref(info)),
              "peat_backend_device_info")
        return Device(info.device_type, info.device_id, info.name.decode(), info.vendor.decode(),
                      info.total_memory_bytes, info.compute_units)

    def devices(self) -> list:
        return [self.device(i) for i in range(self.device_count)]

    @property
    def table(self) -> _capi.BackendApi:
        """The backend's function table (peat_backend_table)."""
        return lib.peat_backend_table(self._h).contents

    def signature(self, golden, candidate, signature=None, spatial_map=None, *, stream=None,
                  **config):
        """Signature of (golden, candidate) computed by this backend
        (signature_accumulate): both tensors in its memory (a CUDA tensor
        for "cuda"; CPU memory for "cpu"), merged into `signature` when given
        (a new Signature is returned), and into `spatial_map` in place.
        `config` as for peat.analyze; `stream` a device stream handle (int,
        None = the default stream). Device plugins take contiguous tensors
        (any byte offset); their errors raise with the backend's message.
        Returns the Signature, or (Signature, SpatialMap) when a map is given."""
        from .analyzer import Signature, make_config
        api = self.table
        if not api.signature_accumulate:
            raise UnsupportedError(f"backend '{self.name}' has no signature_accumulate",
                                   UnsupportedError.status, "signature_accumulate")
        g, c = view(golden), view(candidate)
        cfg = make_config(**config)
        sig = _capi.Signature()
        if signature is None:
            lib.peat_signature_init(byref(sig))
        else:
            ctypes.pointer(sig)[0] = signature.raw
        raw_map = getattr(spatial_map, "raw", spatial_map)  # a SpatialMap or its C struct
        status = api.signature_accumulate(g.ref, c.ref, byref(cfg), byref(sig),
                                          byref(raw_map) if raw_map is not None else None,
                                          c_void_p(stream))
        if status != 0:
            raise error_class(status)(f"backend '{self.name}': signature_accumulate: "
                                      + api.last_error().decode("utf-8", "replace"), status,
                                      "signature_accumulate")
        if spatial_map is None:
            return Signature.from_struct(sig)
        from .analyzer import SpatialMap
        return Signature.from_struct(sig), SpatialMap.from_struct(raw_map)
