#!/usr/bin/env bash
# Installs libfilecoord (the C API of swift-file-coordination) under PREFIX: the library, its header and its
# pkg-config file, so that C programs build with `cc prog.c $(pkg-config --cflags --libs filecoord)`. On Debian, the
# packages of scripts/package-deb.sh are the better way (README, "Other languages").
#
#   scripts/install-libfilecoord.sh PREFIX        e.g. ~/.local or /usr/local
#
# Installs:
#   PREFIX/lib/libfilecoord.so.1.0.0 (soname libfilecoord.so.1, the ABI version), libfilecoord.so.1, libfilecoord.so
#   PREFIX/include/filecoord.h
#   PREFIX/lib/pkgconfig/filecoord.pc (its Libs name PREFIX/lib as the program's run path: ~/.local/lib is not on
#   the loader's path)
# and puts filecoordd and fccoord in PREFIX/bin (the library starts filecoordd on demand; it finds it on PATH).
#
# What is installed is built by scripts/build-static.sh: Swift's runtime linked in, no RUNPATH, only filecoord_*
# exported; moving or removing the toolchain afterwards changes nothing.
#
# Environment (for the repository's own tests, scripts/test-languages.sh):
#   FC_CONFIGURATION=debug FC_SKIP_BUILD=1   install the debug build the tests already have instead: it links Swift's
#                                            runtime from the toolchain (its RUNPATH names the toolchain's runtime
#                                            folder) and is not for users.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ $# -ne 1 ]]; then
    echo "usage: $0 PREFIX" >&2
    exit 64
fi
prefix="$1"
mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
configuration="${FC_CONFIGURATION:-release}"
version="$(scripts/library-version.sh)"
abi="${version%%.*}"

command -v swift >/dev/null || export PATH="$PATH:/opt/swift/usr/bin"

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include" "$prefix/bin"
library="$prefix/lib/libfilecoord.so.$version"
if [[ "$configuration" == "release" ]]; then
    staged="$(mktemp -d /tmp/fc-install-XXXXXX)"
    trap 'rm -rf "$staged"' EXIT
    scripts/build-static.sh "$staged"
    bin="$staged/bin"
    install -m 0755 "$staged/lib/libfilecoord.so.$version" "$library"
else
    command -v patchelf >/dev/null || { echo "error: patchelf is needed (scripts/install-deps.sh)" >&2; exit 1; }
    if [[ "${FC_SKIP_BUILD:-0}" != "1" ]]; then
        for product in filecoord filecoordd fccoord; do swift build -c "$configuration" --product "$product"; done
    fi
    bin="$(swift build -c "$configuration" --show-bin-path)"
    runtime="$(swift -print-target-info | python3 -c \
        'import json,sys; print(json.load(sys.stdin)["paths"]["runtimeLibraryPaths"][0])')"
    install -m 0755 "$bin/libfilecoord.so" "$library"
    # No debug information (the build folder keeps it): valgrind 3.19 cannot read the DWARF 5 Swift writes.
    strip --strip-debug "$library"
    patchelf --set-soname "libfilecoord.so.$abi" "$library"
    patchelf --set-rpath "$runtime" "$library"
fi
ln -sf "libfilecoord.so.$version" "$prefix/lib/libfilecoord.so.$abi"
ln -sf "libfilecoord.so.$abi" "$prefix/lib/libfilecoord.so"
install -m 0644 Languages/c/CFileCoord/include/filecoord.h "$prefix/include/filecoord.h"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" Languages/c/filecoord.pc.in \
    > "$prefix/lib/pkgconfig/filecoord.pc"
install -m 0755 "$bin/filecoordd" "$bin/fccoord" "$prefix/bin/"

echo "installed libfilecoord $version under $prefix"
echo "  cc prog.c \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs filecoord)"
