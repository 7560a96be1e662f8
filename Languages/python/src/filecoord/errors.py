"""The library's errors as Python exceptions: one class per FILECOORD_ERR_* code, with `code`, `message`, `errno`.

Each class also derives from the built-in exception a Python program would catch for the same failure, so that code
written against the standard library handles it without knowing this package: :class:`TimedOut` is a
:class:`TimeoutError`, :class:`WouldWait` a :class:`BlockingIOError` (what ``fcntl.flock`` with ``LOCK_NB``
raises), :class:`Unreachable` a :class:`ConnectionError`, :class:`InvalidArgument` a :class:`ValueError`,
:class:`OperationFailed` an :class:`OSError`, and :class:`FileNotFound` (an :class:`OperationFailed` with errno ENOENT)
a :class:`FileNotFoundError`.
"""

from __future__ import annotations

import errno as _errno
from typing import Dict, Optional, Type

OK = 0
ERR_UNREACHABLE = 1
ERR_CONNECTION_LOST = 2
ERR_DEADLOCK = 3
ERR_PRESENTER_TIMEOUT = 4
ERR_UNSUPPORTED_PATH = 5
ERR_PROTOCOL_VERSION = 6
ERR_NESTED_WRITE = 7
ERR_INVALID_REQUEST = 8
ERR_UNRESOLVABLE_PATH = 9
ERR_TIMED_OUT = 10
ERR_UNTRUSTED_DAEMON = 11
ERR_CLUSTER_UNREACHABLE = 12
ERR_WOULD_WAIT = 13
ERR_CANCELLED = 20
ERR_REFUSED = 21
ERR_IO = 22
ERR_INVALID_ARGUMENT = 23
ERR_OTHER = 99


class FileCoordinationError(Exception):
    """A coordinated call failed; `code` is the library's FILECOORD_ERR_* value, `message` its text and `errno` the
    system's error number of an :data:`ERR_IO` failure (else 0)."""

    code: int = ERR_OTHER
    message: str
    errno: Optional[int]

    def __init__(self, message: str, code: Optional[int] = None, errno: Optional[int] = 0) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.errno = errno

    def __str__(self) -> str:
        return self.message


class Unreachable(FileCoordinationError, ConnectionError):
    """No daemon answered and none could be started, the connection to it was lost while the call waited, it
    speaks another protocol or makes canonical paths by other rules, or a shared folder's cluster cannot decide claims now (codes 1, 2, 6, 12). Also a
    :class:`ConnectionError`."""

    code = ERR_UNREACHABLE


class Deadlock(FileCoordinationError):
    """The call was failed to break a deadlock; the message has the daemon's report (code 3)."""

    code = ERR_DEADLOCK


class PresenterTimeout(FileCoordinationError):
    """A presenter did not answer in time (code 4)."""

    code = ERR_PRESENTER_TIMEOUT


class BadPath(FileCoordinationError):
    """The path cannot be coordinated or resolved (codes 5, 9)."""

    code = ERR_UNSUPPORTED_PATH


class TimedOut(FileCoordinationError, TimeoutError):
    """Not granted within the call's `timeout` (code 10). Also a :class:`TimeoutError`."""

    code = ERR_TIMED_OUT


class WouldWait(FileCoordinationError, BlockingIOError):
    """A call made with ``blocking=False`` met a conflicting claim of another coordinator, held or queued ahead
    (code 13): what ``fcntl.flock(fd, LOCK_EX | LOCK_NB)`` reports as :class:`BlockingIOError`, which this also is,
    with `errno` EWOULDBLOCK."""

    code = ERR_WOULD_WAIT

    def __init__(self, message: str, code: Optional[int] = None, errno: Optional[int] = 0) -> None:
        super().__init__(message, code=code, errno=errno or _errno.EWOULDBLOCK)


class Cancelled(FileCoordinationError):
    """The call's coordinator was cancelled (code 20)."""

    code = ERR_CANCELLED


class Refused(FileCoordinationError):
    """A presenter refused to save or to accommodate a deletion (code 21)."""

    code = ERR_REFUSED


class OperationFailed(FileCoordinationError, OSError):
    """The move or delete itself failed; `errno` says why (code 22). Also an :class:`OSError`."""

    code = ERR_IO


class FileNotFound(OperationFailed, FileNotFoundError):
    """The move or delete found no such file (code 22, errno ENOENT). Also a :class:`FileNotFoundError`."""


class InvalidArgument(FileCoordinationError, ValueError):
    """A missing or empty argument, or one out of range (code 23). Also a :class:`ValueError`."""

    code = ERR_INVALID_ARGUMENT


_CLASSES: Dict[int, Type[FileCoordinationError]] = {
    ERR_UNREACHABLE: Unreachable,
    ERR_CONNECTION_LOST: Unreachable,
    ERR_PROTOCOL_VERSION: Unreachable,
    ERR_CLUSTER_UNREACHABLE: Unreachable,
    ERR_DEADLOCK: Deadlock,
    ERR_PRESENTER_TIMEOUT: PresenterTimeout,
    ERR_UNSUPPORTED_PATH: BadPath,
    ERR_UNRESOLVABLE_PATH: BadPath,
    ERR_TIMED_OUT: TimedOut,
    ERR_WOULD_WAIT: WouldWait,
    ERR_CANCELLED: Cancelled,
    ERR_REFUSED: Refused,
    ERR_IO: OperationFailed,
    ERR_INVALID_ARGUMENT: InvalidArgument,
}

#: The subclasses of :class:`OperationFailed` by errno (the built-in OSError subclass they also derive from).
_IO_CLASSES: Dict[int, Type[OperationFailed]] = {
    _errno.ENOENT: FileNotFound,
}


def error_for(code: int, message: str, errno: int = 0) -> FileCoordinationError:
    """The exception for a library error."""
    cls = _CLASSES.get(code, FileCoordinationError)
    if cls is OperationFailed:
        cls = _IO_CLASSES.get(errno, OperationFailed)
    return cls(message, code=code, errno=errno)
