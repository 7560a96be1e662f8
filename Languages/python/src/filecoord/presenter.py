"""Presenters: Apple's NSFilePresenter methods in snake case, registered and removed with ``with``."""

from __future__ import annotations

import atexit
import os
import threading
from collections import deque
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Deque, Dict, List, Optional, Set, Tuple, Type, TypeVar

from . import _waiting
from ._library import ffi, lib

if TYPE_CHECKING:
    from . import StrPath

#: What ``relinquish_to_reader`` / ``relinquish_to_writer`` may return: the reacquirer, or None.
Reacquirer = Optional[Callable[[], object]]

_Self = TypeVar("_Self", bound="Presenter")

_METHODS: Dict[str, Tuple[str, str]] = {
    # C member: (Python method, C signature)
    "relinquish_to_reader": ("relinquish_to_reader", "void(void *)"),
    "relinquish_to_writer": ("relinquish_to_writer", "void(void *)"),
    "save_presented_item_changes": ("save_presented_item_changes", "int(void *)"),
    "accommodate_presented_item_deletion": ("accommodate_presented_item_deletion", "int(void *)"),
    "accommodate_presented_subitem_deletion": ("accommodate_presented_subitem_deletion", "int(void *, const char *)"),
    "presented_item_did_move": ("presented_item_did_move", "void(void *, const char *)"),
    "presented_item_did_change": ("presented_item_did_change", "void(void *)"),
    "presented_subitem_did_change": ("presented_subitem_did_change", "void(void *, const char *)"),
    "presented_subitem_did_appear": ("presented_subitem_did_appear", "void(void *, const char *)"),
    "presented_subitem_did_move": ("presented_subitem_did_move", "void(void *, const char *, const char *)"),
    "presented_item_did_gain_version": ("presented_item_did_gain_version", "void(void *)"),
    "presented_item_did_lose_version": ("presented_item_did_lose_version", "void(void *)"),
    "presented_item_did_resolve_conflict_version": ("presented_item_did_resolve_conflict_version", "void(void *)"),
}


# Registered presenters are kept alive until removed (their callbacks belong to them), as addFilePresenter keeps
# them; those still registered when the interpreter exits are removed first, so that no callback reaches a Python
# that is shutting down.
_registered: Set[Presenter] = set()


@atexit.register
def _remove_all() -> None:
    for presenter in list(_registered):
        presenter.remove()


class Presenter:
    """Presents an item: subclass it and implement the methods you need (those not implemented are never called,
    and nobody waits for them).

    - ``relinquish_to_reader()`` / ``relinquish_to_writer()``: another process is about to read / write; stop using
      the item. Return a callable (the reacquirer, called when the access is done) or None.
    - ``save_presented_item_changes()``, ``accommodate_presented_item_deletion()``,
      ``accommodate_presented_subitem_deletion(path)``: raise to refuse; the access that asked then fails with
      :class:`filecoord.Refused` (an exception's ``code`` attribute, if an int, is passed on).
    - ``presented_item_did_move(new_path)``, ``presented_item_did_change()``, ``presented_subitem_did_change(path)``,
      ``presented_subitem_did_appear(path)``, ``presented_subitem_did_move(old_path, new_path)``,
      ``presented_item_did_gain_version()``, ``presented_item_did_lose_version()``,
      ``presented_item_did_resolve_conflict_version()``.

    ``with presenter:`` registers it (returning once the daemon has it) and removes it at the end; after removal no
    method is called. Registering waits behind a write claim on the item (the presenter then starts with the
    writer's result), for at most `timeout` seconds (None: as long as it takes), then raises :class:`TimedOut` and
    nothing is registered; the library offers no way to cancel it, so Ctrl-C takes effect once it returned.
    ``async with presenter:`` does the same without blocking the event loop. Methods run on a
    thread of the library's, never on the thread that registered the presenter nor on an event loop's, one at a time
    per presenter; reach a loop from them with ``loop.call_soon_threadsafe``. An exception in a method that cannot
    refuse is ignored.
    """

    def __init__(self, path: StrPath, timeout: Optional[float] = None) -> None:
        self._initial_path = os.path.abspath(os.fspath(path))
        self._timeout = timeout
        self._handle: Any = ffi.NULL
        self._reacquirers: Deque[Reacquirer] = deque()
        self._lock = threading.Lock()
        self._keep: List[Any] = []

    # The methods a subclass implements (declared here for type checkers; those not overridden are never called).
    def relinquish_to_reader(self) -> Reacquirer: ...
    def relinquish_to_writer(self) -> Reacquirer: ...
    def save_presented_item_changes(self) -> None: ...
    def accommodate_presented_item_deletion(self) -> None: ...
    def accommodate_presented_subitem_deletion(self, path: str) -> None: ...
    def presented_item_did_move(self, new_path: str) -> None: ...
    def presented_item_did_change(self) -> None: ...
    def presented_subitem_did_change(self, path: str) -> None: ...
    def presented_subitem_did_appear(self, path: str) -> None: ...
    def presented_subitem_did_move(self, old_path: str, new_path: str) -> None: ...
    def presented_item_did_gain_version(self) -> None: ...
    def presented_item_did_lose_version(self) -> None: ...
    def presented_item_did_resolve_conflict_version(self) -> None: ...

    @property
    def presented_item_path(self) -> str:
        """Where the presented item is now (it follows moves)."""
        if self._handle == ffi.NULL:
            return self._initial_path
        pointer = lib.filecoord_presenter_copy_path(self._handle)
        try:
            return os.fsdecode(ffi.string(pointer))
        finally:
            lib.filecoord_free(pointer)

    def _implements(self, name: str) -> bool:
        method = getattr(type(self), name, None)
        return method is not None and method is not getattr(Presenter, name, None)

    def _callbacks(self) -> Any:
        callbacks = ffi.new("filecoord_presenter_callbacks *")
        callbacks.size = ffi.sizeof("filecoord_presenter_callbacks")
        self._keep = [callbacks]
        for member, (method, signature) in _METHODS.items():
            if not self._implements(method):
                continue
            callback = ffi.callback(signature, self._adapter(member, method, signature.startswith("int")))
            self._keep.append(callback)
            setattr(callbacks, member, callback)
        if self._implements("relinquish_to_reader") or self._implements("relinquish_to_writer"):
            callback = ffi.callback("void(void *, int)", self._reacquire)
            self._keep.append(callback)
            callbacks.reacquire = callback
        return callbacks

    def _adapter(self, member: str, method: str, answers: bool) -> Callable[..., Optional[int]]:
        bound = getattr(self, method)

        def call(context: Any, *arguments: Any) -> Optional[int]:
            decoded = [os.fsdecode(ffi.string(argument)) for argument in arguments]
            try:
                result = bound(*decoded)
            except Exception as error:  # noqa: BLE001 (a refusal, or a bug: either way the access is told)
                result = None
                code = getattr(error, "code", 1)
                refusal = code if isinstance(code, int) and code != 0 else 1
            else:
                refusal = 0
            if member.startswith("relinquish_to"):
                # One reacquire event follows each relinquish, in order.
                with self._lock:
                    self._reacquirers.append(result if callable(result) else None)
            return refusal if answers else None

        return call

    def _reacquire(self, context: Any, after_writer: int) -> None:
        with self._lock:
            reacquirer = self._reacquirers.popleft() if self._reacquirers else None
        if reacquirer is not None:
            try:
                reacquirer()
            except Exception:  # noqa: BLE001 (nothing to tell: the access is over)
                pass

    def add(self, timeout: Optional[float] = None) -> None:
        """Registers the presenter; returns once the daemon has it. Waits behind a write claim on the item for at
        most `timeout` seconds (default: the one given to the constructor; None: as long as it takes)."""
        if self._handle != ffi.NULL:
            return
        if timeout is None:
            timeout = self._timeout
        if timeout is not None and not timeout > 0:
            from .errors import ERR_INVALID_ARGUMENT, InvalidArgument

            raise InvalidArgument("timeout must be positive", code=ERR_INVALID_ARGUMENT)
        error = ffi.new("filecoord_error **")
        handle = lib.filecoord_presenter_add(
            os.fsencode(self._initial_path), self._callbacks(), ffi.NULL, float(timeout or 0), error
        )
        if handle == ffi.NULL:
            _waiting.raise_error(error)
        self._handle = handle
        _registered.add(self)

    def remove(self) -> None:
        """Unregisters the presenter; after it returns no method of it is called."""
        if self._handle == ffi.NULL:
            return
        handle, self._handle = self._handle, ffi.NULL
        _registered.discard(self)
        lib.filecoord_presenter_remove(handle)

    def __enter__(self: _Self) -> _Self:
        self.add()
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        self.remove()

    async def __aenter__(self: _Self) -> _Self:
        # Registering waits for the daemon (briefly, and cannot be cancelled): off the event loop. A task cancelled
        # meanwhile removes it again.
        await _waiting.run_async(self.add, give_back=lambda _: self.remove())
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        traceback: Optional[TracebackType],
    ) -> None:
        await _waiting.run_async(self.remove)
