"""Fixtures of the Python tests: the build's executables, a private daemon, and fc-testhost processes.

Run by scripts/test-languages.sh, which sets FC_PRODUCTS (the folder holding filecoordd and fc-testhost) and
FILECOORDD_SOCKET / FILECOORDD_PATH (a private daemon, started on demand by the first client). Every wait is
bounded and waits for an event.
"""

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time

import pytest

TIMEOUT = 10.0


def products():
    folder = os.environ.get("FC_PRODUCTS")
    if not folder:
        pytest.fail("FC_PRODUCTS must name the folder with filecoordd and fc-testhost (scripts/test-languages.sh)")
    return folder


def claims_of(pid):
    """The daemon's claims of the clients with process id `pid` (`fcdump clients --json`, docs/FCDUMP-SCHEMA.md),
    or None when no client of that process is connected."""
    result = subprocess.run(
        [os.path.join(products(), "fcdump"), "clients", "--json"], capture_output=True, text=True, timeout=TIMEOUT
    )
    assert result.returncode == 0, result.stderr
    dump = json.loads(result.stdout)
    clients = [client for client in dump["clients"] if client["pid"] == pid]
    if not clients:
        return None
    ids = {claim for client in clients for claim in client["claims"]}
    return [claim for claim in dump["claims"] if claim["id"] in ids]


def claims_once(pid, condition, timeout=TIMEOUT):
    """`claims_of(pid)` read again every 20 ms (as the Swift end-to-end tests read `fcdump clients`) until
    `condition` holds of it; fails after `timeout` seconds with the last listing."""
    deadline = time.monotonic() + timeout
    while True:
        claims = claims_of(pid)
        if condition(claims):
            return claims
        if time.monotonic() > deadline:
            raise AssertionError("the daemon's claims of pid %d never matched within %ss: %r" % (pid, timeout, claims))
        time.sleep(0.02)


@pytest.fixture(scope="session", autouse=True)
def private_daemon():
    """Every process of the session talks to one private daemon, started on demand, stopped at the end."""
    if "FILECOORDD_SOCKET" not in os.environ:
        folder = tempfile.mkdtemp(prefix="fc-py-")
        os.environ["FILECOORDD_SOCKET"] = os.path.join(folder, "socket")
    os.environ.setdefault("FILECOORDD_PATH", os.path.join(products(), "filecoordd"))
    os.environ.pop("FILECOORD_ARBITER", None)
    yield
    lock = os.environ["FILECOORDD_SOCKET"] + ".lock"
    try:
        pid = int(open(lock).read().strip() or "0")
        if pid > 0:
            os.kill(pid, 15)
    except (OSError, ValueError):
        pass


class LineProcess:
    """A child process whose standard output is read line by line on a thread of its own."""

    def __init__(self, arguments, **kwargs):
        self.process = subprocess.Popen(
            arguments, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs
        )
        self.lines = []
        self._new = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.process.stdout:
            with self._new:
                self.lines.append(line.rstrip("\n"))
                self._new.notify_all()
        with self._new:
            self._new.notify_all()

    def send(self, line):
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def wait_for(self, prefix, count=1, timeout=TIMEOUT):
        """The `count`-th line starting with `prefix`; fails after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._new:
            while True:
                matching = [line for line in self.lines if line.startswith(prefix)]
                if len(matching) >= count:
                    return matching[count - 1]
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(
                        "no line %r (x%d) within %ss; lines: %r; stderr: %r"
                        % (prefix, count, timeout, self.lines, self._stderr())
                    )
                self._new.wait(remaining)

    def stays_without(self, prefix, seconds=0.3):
        try:
            self.wait_for(prefix, timeout=seconds)
        except AssertionError:
            return True
        return False

    def _stderr(self):
        if self.process.poll() is None:
            return "(running)"
        return self.process.stderr.read()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=TIMEOUT)


@pytest.fixture
def spawn():
    """Starts processes (killed at the end of the test)."""
    started = []

    def start(arguments, **kwargs):
        process = LineProcess(arguments, **kwargs)
        started.append(process)
        return process

    yield start
    for process in started:
        process.kill()


@pytest.fixture
def testhost(spawn):
    """Starts an fc-testhost (a Swift client) and waits for its `ready` line."""

    def start():
        host = spawn([os.path.join(products(), "fc-testhost")])
        host.wait_for("ready")
        return host

    return start


@pytest.fixture
def python_child(spawn):
    """Starts `python -c CODE` with the bindings importable."""

    def start(code, **kwargs):
        return spawn([sys.executable, "-c", code], **kwargs)

    return start
