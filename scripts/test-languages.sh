#!/usr/bin/env bash
# The tests of libfilecoord and the Python bindings (issue 24), as a newcomer would use them: libfilecoord
# installed under a temporary prefix (scripts/install-libfilecoord.sh), the C test compiled with the system's cc
# (-Wall -Werror) against the installed header and library through pkg-config and run under valgrind's memcheck (no
# definite leak, no memory error), then the bindings installed with pip and their pytest suite run.
#
# Needs a debug build of everything (scripts/test.sh builds it first and then runs this); installs what it lacks
# (patchelf, valgrind, pkg-config, python3-venv through scripts/install-deps.sh; cffi and pytest through pip, into a
# virtual environment of the run's own).
#
# Environment:
#   FC_LANG_TESTS=c|python   run only one half.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$PWD"

step() { printf '\n==> %s\n' "$*"; }

. scripts/install-deps.sh
bin="$(swift build --show-bin-path)"
for product in libfilecoord.so filecoordd fc-testhost fccoord; do
    [[ -e "$bin/$product" ]] || { echo "error: $bin/$product is missing: run scripts/test.sh (or swift build)" >&2; exit 1; }
done

work="$(mktemp -d /tmp/fc-langs-XXXXXX)"
prefix="$work/prefix"
export FILECOORDD_SOCKET="$work/run/socket"
export FILECOORDD_PATH="$bin/filecoordd"
# The daemon's version store (the sync example adds conflict versions) in the work folder, not the user's.
export FILECOORD_VERSIONS_DIR="$work/versions"
unset FILECOORD_ARBITER
stop() {
    if [[ -f "$FILECOORDD_SOCKET.lock" ]]; then
        pid="$(tr -dc '0-9' < "$FILECOORDD_SOCKET.lock")"
        [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap stop EXIT

step "Installing libfilecoord under $prefix (scripts/install-libfilecoord.sh, the debug build)"
FC_CONFIGURATION=debug FC_SKIP_BUILD=1 scripts/install-libfilecoord.sh "$prefix"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
readelf -d "$prefix/lib/libfilecoord.so" | grep -E 'SONAME|RUNPATH'

if [[ "${FC_LANG_TESTS:-c}" == "c" || -z "${FC_LANG_TESTS:-}" ]]; then
    step "C: cc -Wall -Werror against the installed header and library (pkg-config filecoord $(pkg-config --modversion filecoord))"
    cc -std=c11 -Wall -Wextra -Werror -o "$work/filecoord_test" Languages/c/filecoord_test.c \
        $(pkg-config --cflags --libs filecoord)
    mkdir -p "$work/c"
    step "C: the test under valgrind --tool=memcheck"
    # Definite leaks and memory errors fail the run. Memory the Swift runtime keeps for the life of the process
    # (metadata caches, the threads of Dispatch and of the library's connection) is "still reachable" or "possibly
    # lost" (interior pointers into Swift's allocations), and is not counted.
    # FCCOORD: the C test runs fccoord inside a claim it holds, with and without the claim's purpose (issue 42).
    FCCOORD="$bin/fccoord" valgrind --tool=memcheck --error-exitcode=3 --leak-check=full --show-leak-kinds=definite \
        --errors-for-leak-kinds=definite --suppressions="$repo/Languages/c/valgrind.supp" --quiet \
        "$work/filecoord_test" "$work/c"
fi

if [[ "${FC_LANG_TESTS:-python}" == "python" || -z "${FC_LANG_TESTS:-}" ]]; then
    step "Python: pip install ./Languages/python into a virtual environment; pytest"
    # A virtual environment of the run's own, removed with it: the user's Python and its packages are not touched.
    python3 -m venv "$work/venv"
    venv_python="$work/venv/bin/python"
    "$venv_python" -m pip install --quiet --disable-pip-version-check cffi pytest wheel setuptools mypy
    # FILECOORD_BUNDLE=0: the package is built without a copy of the library in it (Languages/python/setup.py), and
    # loads the debug build installed above (FILECOORD_LIBRARY); scripts/test-package.sh tests the wheel's own copy.
    FILECOORD_BUNDLE=0 "$venv_python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
        "$repo/Languages/python"
    FILECOORD_LIBRARY="$prefix/lib/libfilecoord.so.1" FC_PRODUCTS="$bin" \
        "$venv_python" -m pytest -q -p no:cacheprovider "$repo/Languages/python/tests"
fi
