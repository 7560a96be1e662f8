#!/usr/bin/env python3
"""One step of a two-folder sync that coordinates with document apps (an example of the Python bindings).

    Examples/sync_step.py LOCAL REMOTE STATE.json

Every file is hashed under a coordinated read (its presenters save first, no coordinated writer is halfway through
it); a file changed on one side only is copied over the other under one claim of both (read the source, write the
destination); a file changed on both sides keeps the local contents and records the remote ones as an unresolved
conflict version of it (NSFileVersion), which a document app then offers to the user. STATE.json remembers the hash
each file had at the last step.
"""

import hashlib
import json
import os
import shutil
import socket
import sys

import filecoord


def digest(path):
    """The SHA-256 of a file, read under a coordinated read; None if it does not exist."""
    if not os.path.isfile(path):
        return None
    with filecoord.reading(path) as readable:
        hash = hashlib.sha256()
        with open(readable, "rb") as file:
            for chunk in iter(lambda: file.read(1 << 16), b""):
                hash.update(chunk)
        return hash.hexdigest()


def copy(source, destination):
    """Copies under one claim of both items (no deadlock with a process claiming them the other way round)."""
    with filecoord.coordinate([(source, "read", 0), (destination, "write", filecoord.WRITE_FOR_REPLACING)]) as paths:
        shutil.copyfile(paths[0], paths[1])


def sync(local, remote, state_path):
    state = {}
    if os.path.exists(state_path):
        with open(state_path) as file:
            state = json.load(file)
    report = []
    for name in sorted(set(os.listdir(local)) | set(os.listdir(remote))):
        here, there = os.path.join(local, name), os.path.join(remote, name)
        mine, theirs, base = digest(here), digest(there), state.get(name)
        if mine == theirs:
            pass
        elif theirs is None or (mine is not None and theirs == base):
            copy(here, there)
            report.append(("sent", name))
        elif mine is None or mine == base:
            copy(there, here)
            report.append(("received", name))
        else:
            filecoord.add_conflict_version(here, there, saving_computer="remote (%s)" % socket.gethostname())
            copy(here, there)
            report.append(("conflict", name))
        state[name] = digest(here)
    with open(state_path, "w") as file:
        json.dump(state, file, indent=1, sort_keys=True)
    return report


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    for action, name in sync(*sys.argv[1:]):
        print(action, name)
