#!/usr/bin/env python3
"""Fails when a hand-written source file is over 450 lines (issue 38): split it by what its parts hold, into files
named for them. Python 3, standard library only.

    python3 scripts/check-file-length.py

Checks every `.swift`, `.c` and `.h` file git knows of (tracked, or new and not ignored) outside `Tests/`,
`Benchmarks/` and `Fuzz/`: `Sources/`, `Examples/` and every other top-level folder with C in it (`contrib/`,
`bindings/`, or wherever they move). Generated files are skipped: `*.pb.swift`, `*.pb-c.c`, `*.pb-c.h`, and
anything under a folder named `generated`. Prints one line per file over the limit, `file: N lines`, and exits 1
when there is one.
"""

import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LIMIT = 450
EXTENSIONS = (".swift", ".c", ".h")
SKIPPED_FOLDERS = ("Tests", "Benchmarks", "Fuzz")
GENERATED_SUFFIXES = (".pb.swift", ".pb-c.c", ".pb-c.h")


def candidate_files():
    """The paths, relative to the root, of the files git knows of, tracked or new and not ignored."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8", "surrogateescape")
    return sorted({path for path in listed.split("\0") if path})


def is_checked(path):
    parts = path.split("/")
    if not path.endswith(EXTENSIONS) or path.endswith(GENERATED_SUFFIXES):
        return False
    if len(parts) < 2 or parts[0] in SKIPPED_FOLDERS or parts[0].startswith("."):
        return False
    return "generated" not in parts[:-1]


def main():
    over = []
    for path in candidate_files():
        full = os.path.join(ROOT, path)
        if not is_checked(path) or not os.path.isfile(full):
            continue
        with open(full, "rb") as file:
            lines = file.read().count(b"\n")
        if lines > LIMIT:
            over.append(f"{path}: {lines} lines")
    for line in over:
        print(line)
    if over:
        print(
            f"error: {len(over)} hand-written source file(s) over {LIMIT} lines (above): split each by what its parts "
            "hold, into files named for them",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
