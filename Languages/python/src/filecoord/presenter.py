"""Presenters: Apple's NSFilePresenter methods in snake case, registered and removed with ``with``."""

import atexit
import os
import threading
from collections import deque

from ._library import ffi, lib

_METHODS = {
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
_registered = set()


@atexit.register
def _remove_all():
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
    method is called. Methods run on a thread of the library's, one at a time; an exception in a method that cannot
    refuse is ignored.
    """

    def __init__(self, path):
        self._initial_path = os.path.abspath(os.fspath(path))
        self._handle = ffi.NULL
        self._reacquirers = deque()
        self._lock = threading.Lock()

    @property
    def presented_item_path(self):
        """Where the presented item is now (it follows moves)."""
        if self._handle == ffi.NULL:
            return self._initial_path
        pointer = lib.filecoord_presenter_copy_path(self._handle)
        try:
            return os.fsdecode(ffi.string(pointer))
        finally:
            lib.filecoord_free(pointer)

    def _implements(self, name):
        method = getattr(type(self), name, None)
        return method is not None and method is not getattr(Presenter, name, None)

    def _callbacks(self):
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

    def _adapter(self, member, method, answers):
        bound = getattr(self, method)

        def call(context, *arguments):
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

    def _reacquire(self, context, after_writer):
        with self._lock:
            reacquirer = self._reacquirers.popleft() if self._reacquirers else None
        if reacquirer is not None:
            try:
                reacquirer()
            except Exception:  # noqa: BLE001 (nothing to tell: the access is over)
                pass

    def add(self):
        """Registers the presenter; returns once the daemon has it."""
        if self._handle != ffi.NULL:
            return
        from . import _raise

        error = ffi.new("filecoord_error **")
        handle = lib.filecoord_presenter_add(os.fsencode(self._initial_path), self._callbacks(), ffi.NULL, error)
        if handle == ffi.NULL:
            _raise(error)
        self._handle = handle
        _registered.add(self)

    def remove(self):
        """Unregisters the presenter; after it returns no method of it is called."""
        if self._handle == ffi.NULL:
            return
        handle, self._handle = self._handle, ffi.NULL
        _registered.discard(self)
        lib.filecoord_presenter_remove(handle)

    def __enter__(self):
        self.add()
        return self

    def __exit__(self, *exc):
        self.remove()
