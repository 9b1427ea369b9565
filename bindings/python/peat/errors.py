"""PEAT statuses as exceptions: one class per status code, each carrying the
library's last-error message (peat_last_error_message) of the failed call."""
from __future__ import annotations

from ._capi import lib


class PeatError(Exception):
    """A PEAT call failed. `status` is the peat_status_t code, `message` the
    library's sentence naming the argument or field at fault."""
    status = -1

    def __init__(self, message: str, status: int | None = None, function: str = ""):
        if status is not None:
            self.status = status
        self.message = message
        self.function = function
        super().__init__(message)


class InvalidArgumentError(PeatError, ValueError):
    status = 1


class OutOfMemoryError(PeatError, MemoryError):
    status = 2


class UnavailableError(PeatError):
    status = 3


class UnsupportedError(PeatError):
    status = 4


class VersionMismatchError(PeatError):
    status = 5


class ShapeMismatchError(PeatError, ValueError):
    status = 6


class NotFoundError(PeatError, LookupError):
    status = 7


class IOError_(PeatError, OSError):
    status = 8


class CorruptDataError(PeatError):
    status = 9


class BufferTooSmallError(PeatError):
    status = 10


class BadStateError(PeatError):
    status = 11


class CancelledError(PeatError):
    status = 12


class TimeoutError_(PeatError, TimeoutError):
    status = 13


class CallbackFailedError(PeatError):
    status = 14


class InternalError(PeatError):
    status = 15


PeatIOError = IOError_
PeatTimeoutError = TimeoutError_

_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, OutOfMemoryError, UnavailableError, UnsupportedError,
    VersionMismatchError, ShapeMismatchError, NotFoundError, IOError_, CorruptDataError,
    BufferTooSmallError, BadStateError, CancelledError, TimeoutError_, CallbackFailedError,
    InternalError)}


def error_class(status: int) -> type:
    """The exception class of a status code (PeatError for an unknown one)."""
    return _BY_STATUS.get(status, PeatError)


def check(status: int, function: str = "") -> None:
    """Raises the exception of `status` with the library's message; OK passes."""
    if status == 0:
        return
    message = lib.peat_last_error_message().decode("utf-8", "replace")
    if not message:
        message = f"{function}: {lib.peat_status_string(status).decode()}"
    raise error_class(status)(message, status, function)
