"""File coordination for Python: NSFileCoordinator and NSFilePresenter through libfilecoord and filecoordd.

Coordinated access::

    with filecoord.reading(path) as p: ...            # p: the path to use while the read is held
    with filecoord.writing(path, merging=True) as p: ...
    filecoord.move(source, destination)
    filecoord.delete(path)

Presenters: subclass :class:`Presenter`, implement the methods you need, and register it with ``with``.

Threads: ``reading``/``writing`` block the calling thread until granted (other Python threads keep running: the
GIL is released while waiting); the claim is held until the ``with`` block ends, whichever thread that is on.
Presenter methods run on a thread of the library's, one at a time per presenter.
"""

import contextlib
import os
import uuid

from . import errors
from ._library import ffi, lib
from .errors import (  # noqa: F401 (re-exported)
    BadPath,
    Cancelled,
    Deadlock,
    FileCoordinationError,
    InvalidArgument,
    OperationFailed,
    PresenterTimeout,
    Refused,
    TimedOut,
    Unreachable,
)

__all__ = [
    "reading",
    "writing",
    "coordinate",
    "move",
    "delete",
    "add_conflict_version",
    "Presenter",
    "library_version",
    "FileCoordinationError",
    "Unreachable",
    "Deadlock",
    "PresenterTimeout",
    "BadPath",
    "TimedOut",
    "Cancelled",
    "Refused",
    "OperationFailed",
    "InvalidArgument",
]

READ_WITHOUT_CHANGES = 1 << 0
READ_RESOLVES_SYMBOLIC_LINK = 1 << 1
WRITE_FOR_DELETING = 1 << 0
WRITE_FOR_MOVING = 1 << 1
WRITE_FOR_MERGING = 1 << 2
WRITE_FOR_REPLACING = 1 << 3


def library_version():
    """libfilecoord's version string."""
    return ffi.string(lib.filecoord_version()).decode()


def _path(path):
    return os.fsencode(os.path.abspath(os.fspath(path)))


def _raise(error_out):
    error = error_out[0]
    code = lib.filecoord_error_code(error)
    message = ffi.string(lib.filecoord_error_message(error)).decode("utf-8", "replace")
    number = lib.filecoord_error_errno(error)
    lib.filecoord_error_free(error)
    raise errors.error_for(code, message, number)


class _Coordinator:
    """A libfilecoord coordinator with a timeout and a purpose, freed when done."""

    def __init__(self, timeout=None, purpose=None):
        self.handle = ffi.NULL
        purpose = purpose or _INHERITED_PURPOSE
        if timeout is None and purpose is None:
            return
        self.handle = lib.filecoord_coordinator_new()
        if timeout is not None:
            if timeout <= 0:
                raise InvalidArgument("timeout must be positive", code=errors.ERR_INVALID_ARGUMENT)
            lib.filecoord_coordinator_set_timeout(self.handle, float(timeout))
        if purpose is not None:
            error = ffi.new("filecoord_error **")
            if lib.filecoord_coordinator_set_purpose(self.handle, purpose.encode(), error) != 0:
                self.close()
                _raise(error)

    def close(self):
        if self.handle != ffi.NULL:
            lib.filecoord_coordinator_free(self.handle)
            self.handle = ffi.NULL

    def __enter__(self):
        return self.handle

    def __exit__(self, *exc):
        self.close()


#: The environment variable that carries the purpose of the claims a command runs inside (docs/SEMANTICS.md §2 rule 4).
PURPOSE_VARIABLE = "FILECOORD_PURPOSE"

#: The purpose of the claims this interpreter was started inside (by ``fccoord``, or another Python holder), read once
#: at import: its claims take it, so that they never wait for the claims that run it.
_INHERITED_PURPOSE = os.environ.get(PURPOSE_VARIABLE) or None


@contextlib.contextmanager
def coordinate(items, timeout=None, purpose=None):
    """Claims several items at once: `items` is a list of ``(path, "read"|"write", options)``; yields the paths to
    use, in the same order, while every claim is held.

    While the block runs, ``os.environ["FILECOORD_PURPOSE"]`` carries the claims' purpose, so that a program it starts
    (``subprocess``) is inside them: ``fccoord``, the preload library and this package in that program never wait
    for them. Without `purpose` the claims take the one this interpreter was started inside, or a new one. The
    variable is the process's: with claims held in several threads at once, a child gets the latest one's."""
    purpose = purpose or _INHERITED_PURPOSE or "python " + uuid.uuid4().hex
    keep = []
    array = ffi.new("filecoord_item[]", len(items))
    for index, (path, kind, options) in enumerate(items):
        encoded = ffi.new("char[]", _path(path))
        keep.append(encoded)
        array[index].path = encoded
        array[index].write = 1 if kind == "write" else 0
        array[index].options = options
    with _Coordinator(timeout, purpose) as coordinator:
        error = ffi.new("filecoord_error **")
        claim = lib.filecoord_claim_begin(coordinator, array, len(items), error)
        if claim == ffi.NULL:
            _raise(error)
        previous = os.environ.get(PURPOSE_VARIABLE)
        os.environ[PURPOSE_VARIABLE] = purpose
        try:
            paths = [
                os.fsdecode(ffi.string(lib.filecoord_claim_path(claim, index)))
                for index in range(lib.filecoord_claim_count(claim))
            ]
            yield paths
        finally:
            # Put back as it was, unless another block changed it meanwhile (a thread's): then that one's stays.
            if os.environ.get(PURPOSE_VARIABLE) == purpose:
                if previous is None:
                    del os.environ[PURPOSE_VARIABLE]
                else:
                    os.environ[PURPOSE_VARIABLE] = previous
            lib.filecoord_claim_end(claim)


@contextlib.contextmanager
def reading(path, without_changes=False, resolves_symbolic_link=False, timeout=None, purpose=None):
    """A coordinated read of `path`: presenters elsewhere save (unless `without_changes`) and relinquish, writers
    wait; yields the path to use until the block ends. `timeout` (seconds) raises :class:`TimedOut`."""
    options = (READ_WITHOUT_CHANGES if without_changes else 0) | (
        READ_RESOLVES_SYMBOLIC_LINK if resolves_symbolic_link else 0
    )
    with coordinate([(path, "read", options)], timeout=timeout, purpose=purpose) as paths:
        yield paths[0]


@contextlib.contextmanager
def writing(path, deleting=False, moving=False, merging=False, replacing=False, timeout=None, purpose=None):
    """A coordinated write of `path`, with Apple's writing options; yields the path to use until the block ends."""
    options = (
        (WRITE_FOR_DELETING if deleting else 0)
        | (WRITE_FOR_MOVING if moving else 0)
        | (WRITE_FOR_MERGING if merging else 0)
        | (WRITE_FOR_REPLACING if replacing else 0)
    )
    with coordinate([(path, "write", options)], timeout=timeout, purpose=purpose) as paths:
        yield paths[0]


def move(source, destination, timeout=None):
    """Moves `source` to `destination` in one coordinated write of both; presenters hear that it moved."""
    with _Coordinator(timeout) as coordinator:
        error = ffi.new("filecoord_error **")
        if lib.filecoord_move(coordinator, _path(source), _path(destination), error) != 0:
            _raise(error)


def delete(path, timeout=None):
    """Deletes `path` (a directory with its contents) in a coordinated write; presenters accommodate first."""
    with _Coordinator(timeout) as coordinator:
        error = ffi.new("filecoord_error **")
        if lib.filecoord_delete(coordinator, _path(path), error) != 0:
            _raise(error)


def add_conflict_version(path, contents_path, saving_computer, timeout=None):
    """For sync tools: records the file at `contents_path` as an unresolved conflict version of `path` (from
    `saving_computer`), in a coordinated write of `path`; document apps find it among the item's conflicts."""
    with _Coordinator(timeout) as coordinator:
        error = ffi.new("filecoord_error **")
        status = lib.filecoord_add_conflict_version(
            coordinator, _path(path), _path(contents_path), saving_computer.encode(), error
        )
        if status != 0:
            _raise(error)


from .presenter import Presenter  # noqa: E402
