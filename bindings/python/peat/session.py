"""The run context of one training run (peat/session.h)."""
from __future__ import annotations

import ctypes
from ctypes import byref, c_char_p, c_int32, c_int64, c_size_t, c_uint32, c_uint64, c_void_p

from . import _capi
from ._capi import lib
from ._handle import OwnsHandle
from .errors import BufferTooSmallError, check

PHASES = {"forward": 0, "backward": 1, "optimizer": 2, "other": 3}
PHASE_NAMES = {v: k for k, v in PHASES.items()}
LOG_LEVELS = {"debug": 0, "info": 1, "warning": 2, "error": 3}


def phase_code(phase) -> int:
    """A phase name ("forward", ...) or code -> its peat_phase_t code."""
    if isinstance(phase, str):
        if phase not in PHASES:
            raise ValueError(f"peat: unknown phase {phase!r} (one of {', '.join(PHASES)})")
        return PHASES[phase]
    return int(phase)


def _b(s):
    return s.encode() if isinstance(s, str) else s


class Session(OwnsHandle):
    """A PEAT session: op-name interning, per-op call counters, step, phase,
    backend, seed and log. Use as a context manager, or call close()."""

    _h = None  # the C handle; None until created, after close

    def __init__(self, *, seed: int = 0x5EA7, backend: str | None = None, rank: int = 0,
                 world_size: int = 1, max_ops: int = 4096, max_log_entries: int = 10000,
                 run_name: str | None = None):
        opts = _capi.SessionOptions()
        lib.peat_session_options_init(byref(opts))
        opts.backend, opts.run_name = _b(backend), _b(run_name)
        opts.rank, opts.world_size, opts.seed = rank, world_size, seed
        opts.max_ops, opts.max_log_entries = max_ops, max_log_entries
        handle = c_void_p()
        check(lib.peat_session_create(byref(opts), byref(handle)), "peat_session_create")
        self._h = handle
        self._children = []  # profilers/injectors closed before the session
        self._names = {}

    # -- lifetime --
    def close(self) -> None:
        for child in reversed(self._children):
            child.close()
        self._children.clear()
        if self._h:
            lib.peat_session_destroy(self._h)
            self._h = c_void_p()

    @property
    def handle(self):
        if not self._h:
            from .errors import BadStateError
            raise BadStateError("peat: the session is closed", 11)
        return self._h

    # -- ops --
    def intern(self, name: str) -> int:
        """Id of an op name (interned on first use)."""
        op = self._names.get(name)
        if op is None:
            out = c_uint32()
            check(lib.peat_session_intern_op(self.handle, _b(name), byref(out)),
                  "peat_session_intern_op")
            op = self._names[name] = out.value
        return op

    def op_name(self, op: int) -> str:
        out = c_char_p()
        check(lib.peat_session_op_name(self.handle, op, byref(out)), "peat_session_op_name")
        return out.value.decode()

    @property
    def op_count(self) -> int:
        out = c_uint32()
        check(lib.peat_session_op_count(self.handle, byref(out)), "peat_session_op_count")
        return out.value

    def next_call(self, op: int) -> int:
        out = c_uint64()
        check(lib.peat_session_next_call(self.handle, op, byref(out)), "peat_session_next_call")
        return out.value

    def call_count(self, op: int) -> int:
        out = c_uint64()
        check(lib.peat_session_call_count(self.handle, op, byref(out)), "peat_session_call_count")
        return out.value

    # -- step, phase --
    @property
    def step(self) -> int:
        out = c_int64()
        check(lib.peat_session_step(self.handle, byref(out)), "peat_session_step")
        return out.value

    @step.setter
    def step(self, value: int) -> None:
        check(lib.peat_session_set_step(self.handle, value), "peat_session_set_step")

    @property
    def phase(self) -> str:
        out = c_int32()
        check(lib.peat_session_phase(self.handle, byref(out)), "peat_session_phase")
        return PHASE_NAMES.get(out.value, str(out.value))

    @phase.setter
    def phase(self, value) -> None:
        check(lib.peat_session_set_phase(self.handle, phase_code(value)), "peat_session_set_phase")

    @property
    def seed(self) -> int:
        out = c_uint64()
        check(lib.peat_session_seed(self.handle, byref(out)), "peat_session_seed")
        return out.value

    @property
    def backend(self) -> str:
        out = c_void_p()
        check(lib.peat_session_backend(self.handle, byref(out)), "peat_session_backend")
        return lib.peat_backend_name(out).decode()

    # -- log --
    def log(self, message: str, level: str = "info") -> None:
        check(lib.peat_session_log(self.handle, LOG_LEVELS[level], _b(message)), "peat_session_log")

    def _log_counts(self) -> tuple:
        count, dropped = c_uint64(), c_uint64()
        check(lib.peat_session_log_count(self.handle, byref(count), byref(dropped)),
              "peat_session_log_count")
        return count.value, dropped.value

    def log_mark(self) -> int:
        """How many entries were ever logged (kept and dropped): a mark for
        logs(since=...)."""
        count, dropped = self._log_counts()
        return count + dropped

    def logs(self, since: int = 0) -> list:
        """The log entries kept, oldest first, as (level name, message); with
        `since` (a log_mark()), only those logged after that mark."""
        count, dropped = self._log_counts()
        levels = {v: k for k, v in LOG_LEVELS.items()}
        out = []
        for i in range(max(0, since - dropped), count):
            level, needed = c_int32(), c_size_t()
            buf = ctypes.create_string_buffer(256)
            status = lib.peat_session_log_entry(self.handle, i, byref(level), buf, 256,
                                                byref(needed))
            if status == BufferTooSmallError.status:
                buf = ctypes.create_string_buffer(needed.value)
                status = lib.peat_session_log_entry(self.handle, i, byref(level), buf,
                                                    needed.value, None)
            check(status, "peat_session_log_entry")
            out.append((levels.get(level.value, str(level.value)), buf.value.decode()))
        return out
