"""The Python bindings across processes and languages: Python and Swift presenters and writers, a Python holder
killed with kill -9, and a hundred threads keeping mutual exclusion."""

import errno
import os
import subprocess
import threading

import pytest

import filecoord


def test_read_and_write_yield_the_path_to_use(tmp_path):
    item = tmp_path / "notes.txt"
    item.write_text("one")
    with filecoord.writing(item) as path:
        assert path == str(item)
        with open(path, "w") as file:
            file.write("two")
    with filecoord.reading(item) as path:
        assert open(path).read() == "two"


def test_errors_are_exceptions_with_the_library_codes(tmp_path):
    item = tmp_path / "held.txt"
    item.write_text("x")
    with filecoord.writing(item):
        # Held by this process's other claim: a read with a timeout gives up.
        outcome = []

        def read():
            try:
                with filecoord.reading(item, timeout=0.3):
                    outcome.append("granted")
            except filecoord.TimedOut as error:
                outcome.append(error)

        thread = threading.Thread(target=read)
        thread.start()
        thread.join(10)
    assert isinstance(outcome[0], filecoord.TimedOut), outcome
    assert outcome[0].code == 10 and outcome[0].message
    # Also the built-in exception for the same failure.
    assert isinstance(outcome[0], TimeoutError)
    with pytest.raises(filecoord.OperationFailed) as raised:
        filecoord.delete(tmp_path / "missing")
    assert raised.value.code == 22 and raised.value.errno == 2


def test_a_nonblocking_claim_fails_at_once_as_flock_lock_nb_would(tmp_path):
    """blocking=False: a claim behind another coordinator's raises WouldWait, a BlockingIOError with EWOULDBLOCK as
    fcntl.flock(LOCK_EX | LOCK_NB) would, without waiting (the timeout, which would raise TimedOut, never comes)."""
    item = tmp_path / "held.txt"
    item.write_text("x")
    with filecoord.writing(item):
        for claim in (filecoord.writing(item, blocking=False, timeout=10), filecoord.reading(item, blocking=False)):
            with pytest.raises(BlockingIOError) as raised:
                with claim:
                    pytest.fail("granted behind the held write")
            assert isinstance(raised.value, filecoord.WouldWait), raised.value
            assert raised.value.code == 13 and raised.value.errno == errno.EWOULDBLOCK
    # Nothing conflicts any more: granted.
    with filecoord.writing(item, blocking=False) as path:
        assert path == str(item)


def test_errors_are_also_the_matching_built_in_exceptions(tmp_path, python_child):
    """Code written against the standard library catches them: TimeoutError, FileNotFoundError, ConnectionError."""
    item = tmp_path / "held.txt"
    item.write_text("x")
    with filecoord.writing(item):
        with pytest.raises(TimeoutError) as timed_out:
            with filecoord.reading(item, timeout=0.2):
                pass
    assert isinstance(timed_out.value, filecoord.TimedOut) and timed_out.value.code == 10
    for call in (lambda: filecoord.delete(tmp_path / "missing"), lambda: filecoord.move(tmp_path / "missing", item)):
        with pytest.raises(FileNotFoundError) as not_found:
            call()
        assert isinstance(not_found.value, filecoord.FileNotFound)
        assert isinstance(not_found.value, filecoord.OperationFailed)
        assert not_found.value.code == 22 and not_found.value.errno == errno.ENOENT
    assert item.read_text() == "x"
    # Unreachable: a daemon socket whose own name is too long for any address fails the first call at once
    # (docs/SEMANTICS.md §9), in a process of its own (this one is connected already).
    socket = str(tmp_path / ("s" * 120))
    child = python_child(
        "import filecoord\n"
        "try:\n"
        "    with filecoord.reading(%r):\n"
        "        print('granted', flush=True)\n"
        "except ConnectionError as error:\n"
        "    print('unreachable', type(error).__name__, error.code, flush=True)\n" % str(item),
        env=dict(os.environ, FILECOORDD_SOCKET=socket),
    )
    assert child.wait_for("unreachable") == "unreachable Unreachable 1"


def test_move_and_delete_tell_presenters(tmp_path):
    item = tmp_path / "a.txt"
    item.write_text("a")
    heard = []
    done = threading.Event()

    class Watcher(filecoord.Presenter):
        def presented_item_did_move(self, new_path):
            heard.append(("moved", new_path))
            done.set()

        def accommodate_presented_item_deletion(self):
            heard.append(("deleting",))

    with Watcher(item) as watcher:
        filecoord.move(item, tmp_path / "b.txt")
        assert done.wait(10)
        assert watcher.presented_item_path == str(tmp_path / "b.txt")
        filecoord.delete(tmp_path / "b.txt")
        assert ("deleting",) in heard
    assert not (tmp_path / "b.txt").exists()


def test_python_presenter_relinquishes_and_saves_for_a_swift_writer(tmp_path, testhost):
    item = tmp_path / "document.txt"
    item.write_text("draft")
    events = []
    reacquired = threading.Event()

    class Editor(filecoord.Presenter):
        def relinquish_to_writer(self):
            events.append("relinquish_to_writer")
            return lambda: (events.append("reacquire"), reacquired.set())

        def save_presented_item_changes(self):
            events.append("save")
            with open(self.presented_item_path, "w") as file:
                file.write("saved by python")

    host = testhost()
    with Editor(item):
        host.send("read %s" % item)
        assert host.wait_for("done read").endswith("saved by python")
        host.send("write %s swift-text merging" % item)
        host.wait_for("granted write")
        # Both answers came before the Swift writer was granted.
        assert "relinquish_to_writer" in events and events.count("save") >= 1, events
        host.wait_for("done write")
        assert reacquired.wait(10), events
    assert item.read_text() == "swift-text"


def test_python_presenter_refusing_a_save_fails_the_swift_writer(tmp_path, testhost):
    item = tmp_path / "document.txt"
    item.write_text("draft")

    class Stubborn(filecoord.Presenter):
        def save_presented_item_changes(self):
            raise RuntimeError("not now")

    host = testhost()
    with Stubborn(item):
        host.send("write %s never merging" % item)
        line = host.wait_for("failed write")
        assert "FileCoordinationBridgePresenter" in line, line
    assert item.read_text() == "draft"


def test_swift_presenter_hears_a_python_writer(tmp_path, testhost):
    item = tmp_path / "shared.txt"
    item.write_text("v1")
    host = testhost()
    host.send("present P %s" % item)
    host.wait_for("presenting P")
    # The daemon has the presenter once a read of this host's is done (its frames are read in order).
    host.send("read %s" % item)
    host.wait_for("done read")
    with filecoord.writing(item, merging=True) as path:
        with open(path, "w") as file:
            file.write("v2 from python")
    host.wait_for("presenter P relinquishToWriter")
    host.wait_for("presenter P reacquire", count=2)
    # The write's messages, in the order docs/SEMANTICS.md §3 gives (relinquish, save for .forMerging, then after
    # the write did change, then the reacquirer), after those of the host's own read.
    events = [line for line in host.lines if line.startswith("presenter P ")]
    write = events[events.index("presenter P relinquishToWriter") :]
    assert write == [
        "presenter P relinquishToWriter",
        "presenter P save",
        "presenter P didChange",
        "presenter P reacquire",
    ], events


def test_a_python_holder_killed_with_kill_9_releases_its_claims(tmp_path, python_child, testhost):
    item = tmp_path / "held.txt"
    item.write_text("x")
    holder = python_child(
        "import filecoord, sys, time\n"
        "with filecoord.writing(%r):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(120)\n" % str(item)
    )
    holder.wait_for("held", timeout=30)
    host = testhost()
    host.send("write %s after" % item)
    assert host.stays_without("granted write"), host.lines
    holder.process.kill()
    holder.process.wait(10)
    host.wait_for("done write")
    assert item.read_text() == "after"


def test_a_forked_child_leaves_its_parents_claim_alone(tmp_path, python_child, testhost):
    """Stop 68 (a read-only review): a child that fork() made inside a claim ended its parent's claim when it left the
    `with` block (its finish went out on the parent's connection), and could decide claims in its parent's leases. Now
    every call in such a child fails (FILECOORD_ERR_INVALID_REQUEST) and it sends nothing."""
    item = tmp_path / "held.txt"
    item.write_text("x")
    other = tmp_path / "other.txt"
    other.write_text("y")
    holder = python_child(
        "import filecoord, os, sys, time\n"
        "with filecoord.writing(%r):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        try:\n"
        "            with filecoord.writing(%r, timeout=5):\n"
        "                print('child granted', flush=True)\n"
        "        except filecoord.FileCoordinationError as error:\n"
        "            print('child refused', error.code, flush=True)\n"
        "        sys.exit(0)\n"  # leaves the parent's `with` block in the child
        "    os.waitpid(pid, 0)\n"
        "    print('held', flush=True)\n"
        "    time.sleep(120)\n" % (str(item), str(other))
    )
    holder.wait_for("child refused 8", timeout=30)
    holder.wait_for("held", timeout=30)
    host = testhost()
    host.send("write %s after" % item)
    assert host.stays_without("granted write"), host.lines
    holder.process.kill()
    holder.process.wait(10)
    host.wait_for("done write")
    assert item.read_text() == "after"


def test_a_hundred_threads_keep_mutual_exclusion(tmp_path):
    item = tmp_path / "counter.txt"
    item.write_text("0")
    marker = str(tmp_path / "inside")
    violations = []
    failures = []

    def work():
        try:
            for _ in range(3):
                with filecoord.writing(item) as path:
                    try:
                        descriptor = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                    except FileExistsError:
                        violations.append(threading.get_ident())
                        continue
                    os.close(descriptor)
                    value = int(open(path).read())
                    with open(path, "w") as file:
                        file.write(str(value + 1))
                    os.unlink(marker)
        except Exception as error:  # noqa: BLE001
            failures.append(error)

    threads = [threading.Thread(target=work) for _ in range(100)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures[:3]
    assert not violations
    assert item.read_text() == "300"


def test_a_command_run_inside_a_python_claim_is_inside_it(tmp_path):
    """Issue 42: a program a Python holder runs (here fccoord, as a script would) is inside the holder's claim: it
    does not wait for it (it waited the whole timeout, then failed, before FILECOORD_PURPOSE was passed on)."""
    from conftest import products

    item = tmp_path / "log.txt"
    item.write_text("")
    fccoord = os.path.join(products(), "fccoord")
    with filecoord.writing(item) as path:
        result = subprocess.run(
            [fccoord, "write", "--timeout", "10", path, "--", "sh", "-c", 'echo child >> "$FCCOORD_PATH_1"'],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert result.returncode == 0, result.stderr
    assert item.read_text() == "child\n"
    assert "FILECOORD_PURPOSE" not in os.environ
    # Its own claims, in another thread and outside any block, still exclude each other (purposes of their own).
    with filecoord.writing(item):
        with pytest.raises(filecoord.TimedOut):
            with filecoord.reading(item, timeout=0.3):
                pass


def test_registering_a_presenter_waits_behind_a_writer_for_at_most_its_timeout(tmp_path, testhost):
    item = tmp_path / "held.txt"
    item.write_text("x")
    host = testhost()
    host.send("write %s swift hold" % item)
    host.wait_for("holding write")

    class Watcher(filecoord.Presenter):
        def presented_item_did_change(self):
            pass

    with pytest.raises(TimeoutError) as raised:
        with Watcher(item, timeout=0.3):
            pass
    assert isinstance(raised.value, filecoord.TimedOut) and raised.value.code == 10
    host.send("release")
    host.wait_for("done write")
    # Once the writer is done it registers, and starts with the writer's result.
    with Watcher(item, timeout=10) as watcher:
        assert open(watcher.presented_item_path).read() == "swift"
