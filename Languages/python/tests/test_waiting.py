"""Waiting for claims without blocking what must not be blocked (issue 43): Ctrl-C interrupts a wait on the main
thread, and `async with` waits without blocking the event loop; either way the request is cancelled and nothing is
left held. The claims waited for are held by a Swift process (fc-testhost), the daemon's state is read with fcdump."""

import asyncio
import os
import signal
import threading
import time

import pytest
from conftest import TIMEOUT, claims_of, claims_once

import filecoord

# A child that waits behind another process's claim, the program's SIGINT handler being Python's default one (set
# again, and SIGINT unblocked, in case the test runner left it ignored or blocked).
WAITER = """
import signal, sys, time
import filecoord
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
print("waiting", flush=True)
started = time.monotonic()
try:
    %s
    print("returned", flush=True)
except KeyboardInterrupt:
    print("interrupted %%.3f" %% (time.monotonic() - started), flush=True)
print("handler", signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)
sys.stdin.readline()
"""


def held_by_swift(testhost, item):
    """An fc-testhost holding a write claim of `item` until it is sent `release`."""
    host = testhost()
    host.send("write %s swift hold" % item)
    host.wait_for("holding write")
    return host


def waiting(claims):
    return bool(claims) and all(claim["phase"] == "waiting" for claim in claims)


@pytest.mark.parametrize(
    "call",
    [
        "with filecoord.writing(%(item)r):\n        print('granted', flush=True)",
        "with filecoord.reading(%(item)r, timeout=600):\n        print('granted', flush=True)",
        "with filecoord.coordinate([(%(other)r, 'read', 0), (%(item)r, 'write', 0)]):\n"
        "        print('granted', flush=True)",
        "import asyncio\n"
        "    async def main():\n"
        "        async with filecoord.writing(%(item)r):\n"
        "            print('granted', flush=True)\n"
        "    asyncio.run(main())",
    ],
    ids=["writing", "reading-with-timeout", "coordinate", "async-with-under-asyncio-run"],
)
def test_ctrl_c_interrupts_a_waiting_claim_and_leaves_nothing_held(tmp_path, testhost, python_child, call):
    item, other = tmp_path / "held.txt", tmp_path / "other.txt"
    item.write_text("x")
    other.write_text("y")
    host = held_by_swift(testhost, item)
    child = python_child(WAITER % (call % {"item": str(item), "other": str(other)}))
    child.wait_for("waiting")
    # The request reached the daemon, and waits for the Swift holder.
    claims_once(child.process.pid, waiting)
    child.process.send_signal(signal.SIGINT)
    # KeyboardInterrupt while the holder still holds: the wait was interrupted, not over.
    child.wait_for("interrupted")
    assert child.wait_for("handler") == "handler True"  # the program's handler was left alone
    assert claims_of(child.process.pid) == []  # the request is gone from the daemon, not granted later
    assert "returned" not in child.lines and not any(line == "granted" for line in child.lines)
    host.send("release")
    host.wait_for("done write")
    # The item is free: nobody (the child's cancelled request included) holds it once the Swift holder is done.
    with filecoord.writing(item, timeout=TIMEOUT):
        pass
    assert claims_of(child.process.pid) == []


def test_ctrl_c_delivered_to_another_thread_still_interrupts_the_wait(tmp_path, testhost, python_child):
    """A process-directed SIGINT may reach any thread that does not block it (a thread of the program's, or of the
    library's): Python then runs the handler on the main thread at its next chance, which the wait gives it."""
    item = tmp_path / "held.txt"
    item.write_text("x")
    host = held_by_swift(testhost, item)
    child = python_child(
        WAITER
        % (
            "import threading\n"
            "    def other():\n"
            "        sys.stdin.readline()\n"
            "        signal.pthread_kill(threading.get_ident(), signal.SIGINT)\n"
            "    threading.Thread(target=other, daemon=True).start()\n"
            "    with filecoord.writing(%r):\n"
            "        print('granted', flush=True)" % str(item)
        )
    )
    child.wait_for("waiting")
    claims_once(child.process.pid, waiting)
    child.send("signal")
    child.wait_for("interrupted")
    assert claims_of(child.process.pid) == []
    host.send("release")
    host.wait_for("done write")


@pytest.mark.parametrize("operation", ["move", "delete", "add_conflict_version"])
def test_ctrl_c_interrupts_a_waiting_operation_which_then_never_happens(tmp_path, testhost, python_child, operation):
    item, moved, contents = tmp_path / "held.txt", tmp_path / "moved.txt", tmp_path / "theirs.txt"
    item.write_text("x")
    contents.write_text("theirs")
    call = {
        "move": "filecoord.move(%r, %r)" % (str(item), str(moved)),
        "delete": "filecoord.delete(%r)" % str(item),
        "add_conflict_version": "filecoord.add_conflict_version(%r, %r, 'elsewhere')" % (str(item), str(contents)),
    }[operation]
    host = held_by_swift(testhost, item)
    child = python_child(WAITER % call)
    child.wait_for("waiting")
    claims_once(child.process.pid, waiting)
    child.process.send_signal(signal.SIGINT)
    child.wait_for("interrupted")
    assert claims_of(child.process.pid) == []
    host.send("release")
    host.wait_for("done write")
    with filecoord.writing(item, timeout=TIMEOUT):
        pass
    assert "returned" not in child.lines
    assert item.read_text() == "swift" and not moved.exists()
    host.send("versions %s" % item)
    assert host.wait_for("conflicts ").rstrip() == "conflicts %s" % item  # no conflict version was added


def test_async_with_waits_without_blocking_the_event_loop(tmp_path, testhost):
    item = tmp_path / "held.txt"
    item.write_text("x")
    host = held_by_swift(testhost, item)
    # A safety net for a wait that blocks the loop: the holder lets go after TIMEOUT, and the test then fails.
    safety = threading.Timer(TIMEOUT, host.send, ["release"])
    safety.start()
    events = []

    async def scenario():
        ticks = 0
        ticked = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while True:
                ticks += 1
                if ticks % 5 == 0:
                    ticked.set()
                await asyncio.sleep(0.01)

        async def write():
            async with filecoord.writing(item) as path:
                events.append("granted")
                with open(path, "w") as file:
                    file.write("python")

        ticking = asyncio.create_task(ticker())
        writer = asyncio.create_task(write())
        await asyncio.to_thread(claims_once, os.getpid(), waiting)
        # The claim waits in the daemon, and the loop runs other coroutines meanwhile.
        ticked.clear()
        start = ticks
        await asyncio.wait_for(ticked.wait(), TIMEOUT)
        assert ticks > start and not writer.done()
        events.append("ticked while waiting")
        host.send("release")
        await asyncio.wait_for(writer, TIMEOUT)
        ticking.cancel()

    try:
        asyncio.run(scenario())
    finally:
        safety.cancel()
    assert events == ["ticked while waiting", "granted"]
    host.wait_for("done write")
    assert item.read_text() == "python"


def test_cancelling_the_task_cancels_the_claim_and_leaves_nothing_held(tmp_path, testhost):
    item = tmp_path / "held.txt"
    item.write_text("x")
    host = held_by_swift(testhost, item)
    events = []

    async def scenario():
        async def write():
            async with filecoord.writing(item):
                events.append("granted")

        writer = asyncio.create_task(write())
        await asyncio.to_thread(claims_once, os.getpid(), waiting)
        writer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await writer
        events.append("cancelled")
        # Nothing of this process is left in the daemon once the task saw CancelledError.
        assert claims_of(os.getpid()) == []

    asyncio.run(scenario())
    host.send("release")
    host.wait_for("done write")
    with filecoord.writing(item, timeout=TIMEOUT):
        pass
    assert events == ["cancelled"]
    assert claims_of(os.getpid()) == []


def test_the_asyncio_calls_move_delete_and_present(tmp_path):
    item = tmp_path / "a.txt"
    item.write_text("a")
    moved = threading.Event()

    class Watcher(filecoord.Presenter):
        def presented_item_did_move(self, new_path):
            moved.set()

    async def scenario():
        async with Watcher(item) as watcher:
            async with filecoord.reading(item) as path:
                assert path == str(item)
            async with filecoord.coordinate([(item, "read", 0), (tmp_path / "c.txt", "write", 0)]) as paths:
                assert paths == [str(item), str(tmp_path / "c.txt")]
            await filecoord.aio.move(item, tmp_path / "b.txt")
            assert await asyncio.to_thread(moved.wait, TIMEOUT)
            assert watcher.presented_item_path == str(tmp_path / "b.txt")
            await filecoord.aio.delete(tmp_path / "b.txt")
            with pytest.raises(FileNotFoundError):
                await filecoord.aio.delete(tmp_path / "b.txt")

    asyncio.run(scenario())
    assert not (tmp_path / "b.txt").exists()


def test_a_claim_is_entered_once(tmp_path):
    claim = filecoord.reading(tmp_path / "x")
    with claim:
        pass
    with pytest.raises(RuntimeError):
        with claim:
            pass


def test_the_package_ships_its_type_hints():
    """PEP 561: py.typed is installed with the package, so type checkers read its hints."""
    folder = os.path.dirname(filecoord.__file__)
    assert os.path.isfile(os.path.join(folder, "py.typed"))


def test_the_type_hints_check_with_mypy_strict(tmp_path):
    """The package and a program using it pass mypy --strict (scripts/test-languages.sh installs mypy)."""
    import mypy.api as api
    program = tmp_path / "program.py"
    program.write_text(
        "import asyncio\n"
        "import filecoord\n"
        "def read(path: str) -> bytes:\n"
        "    with filecoord.reading(path) as p:\n"
        "        with open(p, 'rb') as f:\n"
        "            return f.read()\n"
        "async def write(path: str) -> None:\n"
        "    async with filecoord.writing(path, timeout=5) as p:\n"
        "        reveal_type(p)\n"
        "    async with filecoord.coordinate([(path, 'read', 0)]) as ps:\n"
        "        reveal_type(ps)\n"
        "    await filecoord.aio.move(path, path + '.bak')\n"
        "try:\n"
        "    read('x')\n"
        "except filecoord.TimedOut as error:\n"
        "    reveal_type(error.code)\n"
        "class Editor(filecoord.Presenter):\n"
        "    def presented_item_did_move(self, new_path: str) -> None:\n"
        "        self.title = new_path\n"
        "with Editor('x') as editor:\n"
        "    reveal_type(editor)\n"
    )
    cache = str(tmp_path / "mypy-cache")
    out, err, status = api.run(["--strict", "--no-incremental", "--cache-dir", cache, str(program)])
    assert status == 0, out + err
    revealed = [line.split("Revealed type is ")[1] for line in out.split("\n") if "Revealed type is" in line]
    # Older mypy spells the names with their module (builtins.str).
    expected = ['"str"', '"list[str]"', '"int"', '"program.Editor"']
    assert [kind.replace("builtins.", "") for kind in revealed] == expected, out
    assert "missing library stubs or py.typed marker" not in out


def test_a_forked_child_starts_helper_threads_of_its_own():
    """The main thread's waits reuse an idle helper thread; a child forked while one is idle has no such thread and
    must not hand it work (its wait would never end)."""
    from filecoord import _waiting

    ran = threading.Event()
    _waiting._start_thread(ran.set)
    assert ran.wait(TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while not _waiting._Helper._idle:  # the helper puts itself back just after its job
        assert time.monotonic() < deadline
        time.sleep(0.001)
    pid = os.fork()
    if pid == 0:
        done = threading.Event()
        _waiting._start_thread(done.set)
        os._exit(0 if done.wait(TIMEOUT) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
