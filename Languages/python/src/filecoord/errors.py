"""The library's errors as Python exceptions: one class per FILECOORD_ERR_* code, with `code`, `message`, `errno`."""

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
ERR_CANCELLED = 20
ERR_REFUSED = 21
ERR_IO = 22
ERR_INVALID_ARGUMENT = 23
ERR_OTHER = 99


class FileCoordinationError(Exception):
    """A coordinated call failed; `code` is the library's FILECOORD_ERR_* value."""

    code = ERR_OTHER

    def __init__(self, message, code=None, errno=0):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.errno = errno


class Unreachable(FileCoordinationError):
    """No daemon answered and none could be started, or the connection to it was lost (codes 1, 2, 6)."""

    code = ERR_UNREACHABLE


class Deadlock(FileCoordinationError):
    code = ERR_DEADLOCK


class PresenterTimeout(FileCoordinationError):
    code = ERR_PRESENTER_TIMEOUT


class BadPath(FileCoordinationError):
    """The path cannot be coordinated or resolved (codes 5, 9)."""

    code = ERR_UNSUPPORTED_PATH


class TimedOut(FileCoordinationError):
    code = ERR_TIMED_OUT


class Cancelled(FileCoordinationError):
    code = ERR_CANCELLED


class Refused(FileCoordinationError):
    """A presenter refused to save or to accommodate a deletion."""

    code = ERR_REFUSED


class OperationFailed(FileCoordinationError, OSError):
    """The move or delete itself failed; `errno` says why."""

    code = ERR_IO


class InvalidArgument(FileCoordinationError, ValueError):
    code = ERR_INVALID_ARGUMENT


_CLASSES = {
    ERR_UNREACHABLE: Unreachable,
    ERR_CONNECTION_LOST: Unreachable,
    ERR_PROTOCOL_VERSION: Unreachable,
    ERR_DEADLOCK: Deadlock,
    ERR_PRESENTER_TIMEOUT: PresenterTimeout,
    ERR_UNSUPPORTED_PATH: BadPath,
    ERR_UNRESOLVABLE_PATH: BadPath,
    ERR_TIMED_OUT: TimedOut,
    ERR_CANCELLED: Cancelled,
    ERR_REFUSED: Refused,
    ERR_IO: OperationFailed,
    ERR_INVALID_ARGUMENT: InvalidArgument,
}


def error_for(code, message, errno=0):
    """The exception for a library error."""
    return _CLASSES.get(code, FileCoordinationError)(message, code=code, errno=errno)
