"""File coordination for Python: NSFileCoordinator and NSFilePresenter through libfilecoord and filecoordd.

Coordinated access, with ``with`` or, in a coroutine, ``async with``::

    with filecoord.reading(path) as p: ...            # p: the path to use while the read is held
    async with filecoord.writing(path, merging=True) as p: ...
    filecoord.move(source, destination)                # await filecoord.aio.move(...) in a coroutine
    filecoord.delete(path)

Presenters: subclass :class:`Presenter`, implement the methods you need, and register it with ``with``.

Threads: ``reading``/``writing``/``coordinate`` block the calling thread until granted (other Python threads keep
running: the GIL is released while waiting); the claim is held until the ``with`` block ends, whichever thread that is
on. On the main thread the wait can be interrupted: Ctrl-C (or any exception a signal handler raises) cancels the
request, leaves nothing held and raises KeyboardInterrupt. ``async with`` waits without blocking the event loop, and
cancelling the task cancels the request. Presenter methods run on a thread of the library's, one at a time per
presenter.
"""

from __future__ import annotations

import os
import uuid
from types import TracebackType
from typing import Any, Callable, Generic, List, Optional, Sequence, Tuple, Type, TypeVar, Union

from . import _library, _waiting, errors
from ._library import ffi, lib
from .errors import (
    BadPath,
    Cancelled,
    Deadlock,
    FileCoordinationError,
    FileNotFound,
    InvalidArgument,
    OperationFailed,
    PresenterTimeout,
    Refused,
    TimedOut,
    Unreachable,
    WouldWait,
)

__all__ = [
    "reading",
    "writing",
    "coordinate",
    "move",
    "delete",
    "add_conflict_version",
    "Claim",
    "Presenter",
    "library_version",
    "library_path",
    "StrPath",
    "FileCoordinationError",
    "Unreachable",
    "Deadlock",
    "PresenterTimeout",
    "BadPath",
    "TimedOut",
    "WouldWait",
    "Cancelled",
    "Refused",
    "OperationFailed",
    "FileNotFound",
    "InvalidArgument",
    "READ_WITHOUT_CHANGES",
    "READ_RESOLVES_SYMBOLIC_LINK",
    "WRITE_FOR_DELETING",
    "WRITE_FOR_MOVING",
    "WRITE_FOR_MERGING",
    "WRITE_FOR_REPLACING",
    "PURPOSE_VARIABLE",
]

READ_WITHOUT_CHANGES = 1 << 0
READ_RESOLVES_SYMBOLIC_LINK = 1 << 1
WRITE_FOR_DELETING = 1 << 0
WRITE_FOR_MOVING = 1 << 1
WRITE_FOR_MERGING = 1 << 2
WRITE_FOR_REPLACING = 1 << 3

#: A path: a string or an ``os.PathLike`` (``pathlib.Path``).
StrPath = Union[str, "os.PathLike[str]"]

#: What a :class:`Claim` yields: the path of ``reading``/``writing``, the list of paths of ``coordinate``.
Paths = TypeVar("Paths", str, List[str])


def library_version() -> str:
    """libfilecoord's version string."""
    return str(ffi.string(lib.filecoord_version()).decode())


def library_path() -> str:
    """Where libfilecoord was loaded from: the copy this package carries, the installed one's soname, or
    FILECOORD_LIBRARY."""
    return _library.path


def _path(path: StrPath) -> bytes:
    return os.fsencode(os.path.abspath(os.fspath(path)))


#: The environment variable that carries the purpose of the claims a command runs inside (docs/SEMANTICS.md §2 rule 4).
PURPOSE_VARIABLE = "FILECOORD_PURPOSE"

#: The purpose of the claims this interpreter was started inside (by ``fccoord``, or another Python holder), read once
#: at import: its claims take it, so that they never wait for the claims that run it.
_INHERITED_PURPOSE = os.environ.get(PURPOSE_VARIABLE) or None


def _coordinator(
    timeout: Optional[float], purpose: Optional[str] = None, blocking: bool = True
) -> _waiting.Coordinator:
    if timeout is not None and not timeout > 0:
        raise InvalidArgument("timeout must be positive", code=errors.ERR_INVALID_ARGUMENT)
    return _waiting.Coordinator(timeout, purpose or _INHERITED_PURPOSE, blocking)


class Claim(Generic[Paths]):
    """Coordinated access to items, held while a ``with`` or ``async with`` block runs: what :func:`reading`,
    :func:`writing` and :func:`coordinate` return. Entering it waits until every claim is granted and gives the
    path(s) to use; leaving the block releases them. Each Claim is entered once.

    ``with``: waits on the calling thread. On the main thread an exception raised while waiting (KeyboardInterrupt
    from Ctrl-C, or whatever a signal handler raises) cancels the request through the library
    (``filecoord_coordinator_cancel``) and propagates once nothing is held or asked for any more.

    ``async with``: waits on a helper thread without blocking the event loop; cancelling the task cancels the request
    the same way, and the task sees CancelledError once nothing is held or asked for any more.

    With ``blocking=False`` entering raises :class:`WouldWait` (a :class:`BlockingIOError`) at once instead of waiting
    for a conflicting claim of another coordinator, held or queued ahead: ``fcntl.flock``'s ``LOCK_NB``. Presenters
    are still asked first, and waited for.

    While the block runs, ``os.environ["FILECOORD_PURPOSE"]`` carries the claims' purpose, so that a program it
    starts (``subprocess``) is inside them: ``fccoord``, the preload library and this package in that program never
    wait for them. The variable is the process's: with claims held in several threads (or tasks) at once, a child
    gets the latest one's.
    """

    def __init__(
        self,
        items: Sequence[Tuple[StrPath, str, int]],
        timeout: Optional[float],
        purpose: Optional[str],
        result: Callable[[List[str]], Paths],
        blocking: bool = True,
    ) -> None:
        if timeout is not None and not timeout > 0:
            raise InvalidArgument("timeout must be positive", code=errors.ERR_INVALID_ARGUMENT)
        self._items = [(_path(path), 1 if kind == "write" else 0, int(options)) for path, kind, options in items]
        self._timeout = timeout
        self._blocking = bool(blocking)
        self._purpose = purpose or _INHERITED_PURPOSE or "python " + uuid.uuid4().hex
        self._result: Callable[[List[str]], Paths] = result
        self._entered = False
        self._coordinator: Optional[_waiting.Coordinator] = None
        self._claim: Any = None
        self._previous_purpose: Optional[str] = None

    def _start(self) -> _waiting.Coordinator:
        if self._entered:
            raise RuntimeError("a filecoord.Claim is entered once; call reading/writing/coordinate again")
        self._entered = True
        return _coordinator(self._timeout, self._purpose, self._blocking)

    def _begin(self, coordinator: _waiting.Coordinator) -> Tuple[Any, List[str]]:
        """filecoord_claim_begin (on the thread that waits): the claim and the paths to use."""
        encoded = [ffi.new("char[]", path) for path, _, _ in self._items]
        array = ffi.new("filecoord_item[]", len(self._items))
        for index, (_, write, options) in enumerate(self._items):
            array[index].path = encoded[index]
            array[index].write = write
            array[index].options = options
        error = ffi.new("filecoord_error **")
        claim = lib.filecoord_claim_begin(coordinator.handle, array, len(self._items), error)
        if claim == ffi.NULL:
            _waiting.raise_error(error)
        paths = [
            os.fsdecode(ffi.string(lib.filecoord_claim_path(claim, index)))
            for index in range(lib.filecoord_claim_count(claim))
        ]
        return claim, paths

    @staticmethod
    def _give_back(begun: Tuple[Any, List[str]]) -> None:
        lib.filecoord_claim_end(begun[0])

    def _hold(self, coordinator: _waiting.Coordinator, begun: Tuple[Any, List[str]]) -> Paths:
        self._coordinator, self._claim = coordinator, begun[0]
        try:
            self._previous_purpose = os.environ.get(PURPOSE_VARIABLE)
            os.environ[PURPOSE_VARIABLE] = self._purpose
            return self._result(begun[1])
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        coordinator, claim = self._coordinator, self._claim
        self._coordinator = self._claim = None
        if coordinator is None:
            return
        try:
            # Put back as it was, unless another block changed it meanwhile (a thread's): then that one's stays.
            if os.environ.get(PURPOSE_VARIABLE) == self._purpose:
                if self._previous_purpose is None:
                    del os.environ[PURPOSE_VARIABLE]
                else:
                    os.environ[PURPOSE_VARIABLE] = self._previous_purpose
        finally:
            lib.filecoord_claim_end(claim)
            coordinator.close()

    def __enter__(self) -> Paths:
        coordinator = self._start()
        try:
            begun = _waiting.wait(coordinator, lambda: self._begin(coordinator), self._give_back)
        except BaseException:
            coordinator.close()
            raise
        return self._hold(coordinator, begun)

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self._release()

    async def __aenter__(self) -> Paths:
        coordinator = self._start()
        try:
            begun = await _waiting.wait_async(coordinator, lambda: self._begin(coordinator), self._give_back)
        except BaseException:
            coordinator.close()
            raise
        return self._hold(coordinator, begun)

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        # filecoord_claim_end waits until the daemon has the release: off the event loop.
        await _waiting.run_async(self._release)


def coordinate(
    items: Sequence[Tuple[StrPath, str, int]],
    timeout: Optional[float] = None,
    purpose: Optional[str] = None,
    blocking: bool = True,
) -> Claim[List[str]]:
    """Claims several items at once: `items` is a list of ``(path, "read"|"write", options)``; the block gets the
    paths to use, in the same order, while every claim is held (``with`` or ``async with``, see :class:`Claim`).

    Without `purpose` the claims take the one this interpreter was started inside, or a new one. ``blocking=False``
    raises :class:`WouldWait` instead of waiting for another coordinator's claim."""
    return Claim(items, timeout, purpose, list, blocking)


def _first(paths: List[str]) -> str:
    return paths[0]


def reading(
    path: StrPath,
    without_changes: bool = False,
    resolves_symbolic_link: bool = False,
    timeout: Optional[float] = None,
    purpose: Optional[str] = None,
    blocking: bool = True,
) -> Claim[str]:
    """A coordinated read of `path`: presenters elsewhere save (unless `without_changes`) and relinquish, writers
    wait; the block gets the path to use (``with`` or ``async with``, see :class:`Claim`). `timeout` (seconds)
    raises :class:`TimedOut`; ``blocking=False`` raises :class:`WouldWait` instead of waiting for a writer."""
    options = (READ_WITHOUT_CHANGES if without_changes else 0) | (
        READ_RESOLVES_SYMBOLIC_LINK if resolves_symbolic_link else 0
    )
    return Claim([(path, "read", options)], timeout, purpose, _first, blocking)


def writing(
    path: StrPath,
    deleting: bool = False,
    moving: bool = False,
    merging: bool = False,
    replacing: bool = False,
    timeout: Optional[float] = None,
    purpose: Optional[str] = None,
    blocking: bool = True,
) -> Claim[str]:
    """A coordinated write of `path`, with Apple's writing options; the block gets the path to use (``with`` or
    ``async with``, see :class:`Claim`). ``blocking=False`` raises :class:`WouldWait` instead of waiting for another
    coordinator's claim, as ``fcntl.flock(fd, LOCK_EX | LOCK_NB)`` raises :class:`BlockingIOError`."""
    options = (
        (WRITE_FOR_DELETING if deleting else 0)
        | (WRITE_FOR_MOVING if moving else 0)
        | (WRITE_FOR_MERGING if merging else 0)
        | (WRITE_FOR_REPLACING if replacing else 0)
    )
    return Claim([(path, "write", options)], timeout, purpose, _first, blocking)


def _nothing(_: None) -> None:
    pass


#: An operation ready to run: its coordinator and the call (raising on failure).
_Prepared = Tuple[_waiting.Coordinator, Callable[[], None]]


def _operation(timeout: Optional[float], call: Callable[[Any, Any], int]) -> _Prepared:
    """A coordinator and the library call `call(coordinator, error)` that raises on failure."""
    coordinator = _coordinator(timeout)

    def run() -> None:
        error = ffi.new("filecoord_error **")
        if call(coordinator.handle, error) != 0:
            _waiting.raise_error(error)

    return coordinator, run


def _move(source: StrPath, destination: StrPath, timeout: Optional[float]) -> _Prepared:
    source_bytes, destination_bytes = _path(source), _path(destination)
    return _operation(
        timeout, lambda handle, error: int(lib.filecoord_move(handle, source_bytes, destination_bytes, error))
    )


def _delete(path: StrPath, timeout: Optional[float]) -> _Prepared:
    path_bytes = _path(path)
    return _operation(timeout, lambda handle, error: int(lib.filecoord_delete(handle, path_bytes, error)))


def _add_conflict_version(
    path: StrPath, contents_path: StrPath, saving_computer: str, timeout: Optional[float]
) -> _Prepared:
    path_bytes, contents_bytes, computer = _path(path), _path(contents_path), saving_computer.encode()
    return _operation(
        timeout,
        lambda handle, error: int(
            lib.filecoord_add_conflict_version(handle, path_bytes, contents_bytes, computer, error)
        ),
    )


def _perform(prepared: _Prepared) -> None:
    coordinator, run = prepared
    try:
        _waiting.wait(coordinator, run, _nothing)
    finally:
        coordinator.close()


def move(source: StrPath, destination: StrPath, timeout: Optional[float] = None) -> None:
    """Moves `source` to `destination` (replacing a file there) in one coordinated write of both; presenters hear
    that it moved. Raises :class:`FileNotFound` when `source` does not exist."""
    _perform(_move(source, destination, timeout))


def delete(path: StrPath, timeout: Optional[float] = None) -> None:
    """Deletes `path` (a directory with its contents) in a coordinated write; presenters accommodate first. Raises
    :class:`FileNotFound` when it does not exist."""
    _perform(_delete(path, timeout))


def add_conflict_version(
    path: StrPath, contents_path: StrPath, saving_computer: str, timeout: Optional[float] = None
) -> None:
    """For sync tools: records the file at `contents_path` as an unresolved conflict version of `path` (from
    `saving_computer`), in a coordinated write of `path`; document apps find it among the item's conflicts."""
    _perform(_add_conflict_version(path, contents_path, saving_computer, timeout))


from . import aio  # noqa: E402, F401  (filecoord.aio; it needs the names above)
from .presenter import Presenter  # noqa: E402
