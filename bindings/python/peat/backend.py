"""The backend registry (peat/backend.h): which backends are loaded and their devices."""
from __future__ import annotations

import ctypes
import dataclasses
from ctypes import byref, c_int32, c_void_p

from . import _capi
from ._capi import lib
from .errors import check


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
