"""The coordinated calls for asyncio: the same names as the package's, waiting without blocking the event loop.

::

    async with filecoord.reading(path) as p: ...          # the claims themselves support ``async with``
    await filecoord.aio.move(source, destination)
    await filecoord.aio.delete(path)

Each call waits on a helper thread; cancelling the awaiting task cancels the request through the library
(``filecoord_coordinator_cancel``) and raises CancelledError once nothing is held or asked for any more.
``reading``, ``writing`` and ``coordinate`` are the package's own (their :class:`filecoord.Claim` supports both
``with`` and ``async with``), repeated here so that ``filecoord.aio`` has every name.

A move, delete or conflict version cancelled while it waits does not happen. Registering a presenter (``async with presenter``)
cannot be cancelled: the task sees CancelledError once it returned, and the presenter is removed again.
"""

from __future__ import annotations

from typing import Optional

from . import (
    Claim,
    StrPath,
    _add_conflict_version,
    _Prepared,
    _delete,
    _move,
    _nothing,
    _waiting,
    coordinate,
    reading,
    writing,
)

__all__ = ["reading", "writing", "coordinate", "move", "delete", "add_conflict_version", "Claim"]


async def _perform(prepared: _Prepared) -> None:
    coordinator, run = prepared
    try:
        await _waiting.wait_async(coordinator, run, _nothing)
    finally:
        coordinator.close()


async def move(source: StrPath, destination: StrPath, timeout: Optional[float] = None) -> None:
    """:func:`filecoord.move` for coroutines."""
    await _perform(_move(source, destination, timeout))


async def delete(path: StrPath, timeout: Optional[float] = None) -> None:
    """:func:`filecoord.delete` for coroutines."""
    await _perform(_delete(path, timeout))


async def add_conflict_version(
    path: StrPath, contents_path: StrPath, saving_computer: str, timeout: Optional[float] = None
) -> None:
    """:func:`filecoord.add_conflict_version` for coroutines."""
    await _perform(_add_conflict_version(path, contents_path, saving_computer, timeout))
