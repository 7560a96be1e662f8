"""The README's examples for other languages: the Python sync step and the fccoord backup script."""

import os
import subprocess
import sys
import tarfile

from conftest import products

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "Examples")


def run_sync(local, remote, state):
    result = subprocess.run(
        [sys.executable, os.path.join(EXAMPLES, "sync_step.py"), str(local), str(remote), str(state)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split("\n")


def test_the_sync_step_records_a_conflict_as_a_version_a_swift_app_sees(tmp_path, testhost):
    local, remote = tmp_path / "local", tmp_path / "remote"
    local.mkdir()
    remote.mkdir()
    (local / "a.txt").write_text("v1")
    state = tmp_path / "state.json"
    assert "sent a.txt" in run_sync(local, remote, state)
    assert (remote / "a.txt").read_text() == "v1"

    (local / "a.txt").write_text("mine")
    (remote / "a.txt").write_text("theirs")
    assert "conflict a.txt" in run_sync(local, remote, state)
    assert (local / "a.txt").read_text() == "mine"

    host = testhost()
    host.send("versions %s" % (local / "a.txt"))
    conflicts = host.wait_for("conflicts ")
    identifiers = conflicts.split(" ", 2)[2]
    assert identifiers and len(identifiers.split(",")) == 1, conflicts


def test_the_backup_script_archives_a_folder_under_a_coordinated_read(tmp_path):
    folder = tmp_path / "Documents"
    folder.mkdir()
    (folder / "letter.txt").write_text("dear")
    archive = tmp_path / "backup.tar.gz"
    environment = dict(os.environ, PATH=products() + os.pathsep + os.environ["PATH"])
    result = subprocess.run(
        ["sh", os.path.join(EXAMPLES, "backup-with-fccoord.sh"), str(folder), str(archive)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    with tarfile.open(archive) as tar:
        assert "Documents/letter.txt" in tar.getnames()
