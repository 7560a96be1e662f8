"""Waiting for the library without blocking what must not be blocked: the main thread's signals, an event loop.

A library call that waits for claims (``filecoord_claim_begin``, ``filecoord_move``, ...) blocks its thread in C,
where Python cannot deliver a signal. Called from the main thread, it therefore runs on a helper thread while the
main thread waits for it in Python, which runs signal handlers as usual (the program's own, Ctrl-C's
KeyboardInterrupt). When that wait ends with an exception, the call is cancelled through its coordinator
(``filecoord_coordinator_cancel``), and what it obtained if it won the race (a claim granted as it was cancelled) is
given back. From a coroutine the call runs on a helper thread the same way, and cancelling the task cancels it.
No signal handler and no signal mask is touched: the library lives in other people's processes.
"""

from __future__ import annotations

import _thread
import asyncio
import os
import queue
import threading
from typing import Any, Callable, Generic, List, Optional, TypeVar

from ._library import ffi, lib

T = TypeVar("T")

#: How often the main thread's wait wakes up to run signal handlers whose signal reached another thread (a
#: process-directed signal goes to the main thread whenever it does not block it, so this is only a backstop).
_WAKE_SECONDS = 0.2


class Coordinator:
    """A libfilecoord coordinator (a timeout, a purpose, a way to cancel) for one access, freed once unused.

    :meth:`close` frees it at once when no call of it runs, else as soon as the last one returns (a call abandoned
    by an interrupted caller may still be on its way out)."""

    def __init__(
        self, timeout: Optional[float] = None, purpose: Optional[str] = None, blocking: bool = True
    ) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._closing = False
        self.handle: Any = lib.filecoord_coordinator_new()
        if timeout is not None:
            lib.filecoord_coordinator_set_timeout(self.handle, float(timeout))
        if not blocking:
            lib.filecoord_coordinator_set_nonblocking(self.handle, 1)
        if purpose is not None:
            error = ffi.new("filecoord_error **")
            if lib.filecoord_coordinator_set_purpose(self.handle, purpose.encode(), error) != 0:
                self.close()
                raise_error(error)

    def call_started(self) -> None:
        with self._lock:
            self._calls += 1

    def call_ended(self) -> None:
        with self._lock:
            self._calls -= 1
            free = self._closing and self._calls == 0
        if free:
            self._free()

    def cancel(self) -> None:
        """Fails the coordinator's waiting and later calls with FILECOORD_ERR_CANCELLED."""
        with self._lock:
            if self.handle != ffi.NULL:
                lib.filecoord_coordinator_cancel(self.handle)

    def close(self) -> None:
        with self._lock:
            self._closing = True
            if self._calls > 0:
                return
        self._free()

    def _free(self) -> None:
        with self._lock:
            handle, self.handle = self.handle, ffi.NULL
        if handle != ffi.NULL:
            lib.filecoord_coordinator_free(handle)


def raise_error(error_out: Any) -> None:
    """Raises the exception for the filecoord_error in `error_out` (a ``filecoord_error **``) and frees it."""
    from . import errors

    error = error_out[0]
    code = lib.filecoord_error_code(error)
    message = ffi.string(lib.filecoord_error_message(error)).decode("utf-8", "replace")
    number = lib.filecoord_error_errno(error)
    lib.filecoord_error_free(error)
    raise errors.error_for(code, message, number)


#: How long an idle helper thread is kept for the next call.
_IDLE_SECONDS = 10.0


def _start_thread(function: Callable[[], None]) -> None:
    """Runs `function` on a helper thread: it either runs, or this raised (no interruptible wait for a thread to
    start, unlike ``threading.Thread.start``). Like daemon threads, helpers do not hold up the interpreter's exit."""
    _Helper.run(function)


class _Helper:
    """A helper thread kept between calls: it runs the functions handed to it one at a time, and ends after
    `_IDLE_SECONDS` without one. Starting a thread for every wait doubled the cost of a claim on the main thread."""

    _idle: List[_Helper] = []
    _idle_lock = threading.Lock()

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        _thread.start_new_thread(self._loop, ())

    @classmethod
    def run(cls, function: Callable[[], None]) -> None:
        """Runs `function` on an idle helper, or on a new one; raises only if no thread could be started (then it
        does not run)."""
        with cls._idle_lock:
            helper = cls._idle.pop() if cls._idle else None
        if helper is None:
            helper = cls()
        helper._jobs.put(function)

    def _loop(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=_IDLE_SECONDS)
            except queue.Empty:
                with self._idle_lock:
                    if self in self._idle:
                        self._idle.remove(self)
                        return
                continue  # taken just now: its job is on the way
            job()
            with self._idle_lock:
                self._idle.append(self)


def _forget_helpers() -> None:
    # A forked child has none of the parent's threads: their queues would take jobs nobody runs.
    _Helper._idle = []
    _Helper._idle_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_helpers)


class _Call(Generic[T]):
    """One waiting library call on a helper thread. When the caller stops waiting, exactly one side gives back what
    the call obtained: the helper if the call was still running then, else the caller."""

    def __init__(self, coordinator: Coordinator, call: Callable[[], T], give_back: Callable[[T], None]) -> None:
        self._coordinator = coordinator
        self._call = call
        self._give_back = give_back
        self._lock = threading.Lock()
        self._done = False
        self._abandoned = False
        self._succeeded = False
        self._result: Optional[T] = None
        self._error: Optional[BaseException] = None
        self._listeners: List[Callable[[], None]] = []
        self.finished = threading.Event()

    def start(self) -> None:
        self._coordinator.call_started()
        try:
            _start_thread(self._run)
        except BaseException:
            with self._lock:
                self._done = True
            self._coordinator.call_ended()
            self.finished.set()
            raise

    def _run(self) -> None:
        result: Optional[T] = None
        error: Optional[BaseException] = None
        try:
            result = self._call()
        except BaseException as raised:  # noqa: BLE001 (handed to the caller)
            error = raised
        with self._lock:
            self._done = True
            abandoned = self._abandoned
            if not abandoned:
                self._result, self._error, self._succeeded = result, error, error is None
            listeners, self._listeners = self._listeners, []
        try:
            if abandoned and error is None:
                self._give_back(result)  # type: ignore[arg-type]
        finally:
            self._coordinator.call_ended()
            self.finished.set()
            for listener in listeners:
                listener()

    def on_finish(self, listener: Callable[[], None]) -> None:
        """Calls `listener` (on the helper thread, or at once) when the call has returned."""
        with self._lock:
            if not self._done:
                self._listeners.append(listener)
                return
        listener()

    def outcome(self) -> T:
        """The call's result, or its exception raised (once finished)."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._result  # type: ignore[return-value]

    def abandon(self) -> bool:
        """The caller stops waiting: cancels the call, or gives back what it obtained if it already returned.
        Returns whether the call was still running (the helper then gives back what it obtains)."""
        with self._lock:
            self._abandoned = True
            done, succeeded, result = self._done, self._succeeded, self._result
            self._result = self._error = None
            self._succeeded = False
        if done:
            if succeeded:
                self._give_back(result)  # type: ignore[arg-type]
            return False
        self._coordinator.cancel()
        return True


def wait(coordinator: Coordinator, call: Callable[[], T], give_back: Callable[[T], None]) -> T:
    """Runs `call`, a library call waiting for claims of `coordinator`, so that the main thread can be interrupted.

    On the main thread it runs on a helper thread; an exception raised while waiting for it (KeyboardInterrupt from
    Ctrl-C, or whatever a signal handler raises) cancels it, gives back what it obtained (`give_back`), waits until
    it returned, and propagates. On other threads (which Python delivers no signal to) it runs in place."""
    if threading.current_thread() is not threading.main_thread():
        return call()
    pending = _Call(coordinator, call, give_back)
    try:
        pending.start()
        while not pending.finished.wait(_WAKE_SECONDS):
            pass
    except BaseException:
        if pending.abandon():
            # Cancelled: it returns at once. A second interrupt stops this wait; the helper then gives back alone.
            pending.finished.wait()
        raise
    return pending.outcome()


async def wait_async(coordinator: Coordinator, call: Callable[[], T], give_back: Callable[[T], None]) -> T:
    """Runs `call` on a helper thread without blocking the event loop; cancelling the awaiting task cancels the
    call, gives back what it obtained, and waits until it returned before the task sees CancelledError."""
    loop = asyncio.get_running_loop()
    finished: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        try:
            loop.call_soon_threadsafe(_resolve, finished)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    pending = _Call(coordinator, call, give_back)
    pending.on_finish(wake)
    try:
        pending.start()
        await asyncio.shield(finished)
    except BaseException:
        if pending.abandon():
            try:
                await asyncio.shield(finished)
            except asyncio.CancelledError:
                pass  # cancelled again: the helper gives back alone
        raise
    return pending.outcome()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


async def run_async(function: Callable[[], T], give_back: Optional[Callable[[T], None]] = None) -> T:
    """Runs `function` (a short library call that cannot be cancelled) on a helper thread without blocking the event
    loop. A task cancelled meanwhile waits for it to return (so that it never runs on unseen), gives back what it
    obtained (`give_back`), and then sees CancelledError."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def deliver(result: Optional[T], error: Optional[BaseException]) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)  # type: ignore[arg-type]

    def run() -> None:
        result: Optional[T] = None
        error: Optional[BaseException] = None
        try:
            result = function()
        except BaseException as raised:  # noqa: BLE001 (handed to the task)
            error = raised
        try:
            loop.call_soon_threadsafe(deliver, result, error)
        except RuntimeError:  # the loop is closed: nobody waits any more
            pass

    _start_thread(run)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        try:
            result = await asyncio.shield(future)
        except BaseException:  # noqa: BLE001 (its failure, or a second cancellation: the task is cancelled anyway)
            pass
        else:
            if give_back is not None:
                give_back(result)
        raise

