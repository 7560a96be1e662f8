#!/usr/bin/env bash
# Builds the preload library, Languages/preload/build/libfilecoord-preload.so, with the system C compiler and
# libprotobuf-c (Languages/preload/README.md), and prints its absolute path. Incremental (make): a second run with
# nothing changed does nothing. The EndToEndTests suite PreloadEndToEndTests runs it before its tests.
#
#   scripts/build-preload.sh            build, print the path
#   scripts/build-preload.sh install    also install into $PREFIX/lib (default /usr/local)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../Languages/preload"
make --no-print-directory -s >&2
if [[ "${1:-}" == "install" ]]; then
    make --no-print-directory -s install >&2
fi
echo "$PWD/build/libfilecoord-preload.so"
