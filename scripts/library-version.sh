#!/usr/bin/env bash
# Prints libfilecoord's version, "MAJOR.MINOR.PATCH": the one filecoord_version() returns
# (Languages/c/CFileCoord/abi_version.c), which names the library file, the Debian packages and filecoord.pc. Used by
# scripts/build-static.sh, scripts/package-deb.sh and scripts/install-libfilecoord.sh, so that it is written once.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="$(sed -n 's/.*filecoord_version(void) { return "\([0-9.]*\)"; }.*/\1/p' Languages/c/CFileCoord/abi_version.c)"
[[ -n "$version" ]] || { echo "error: no version in Languages/c/CFileCoord/abi_version.c" >&2; exit 1; }
echo "$version"
