#!/usr/bin/env bash
# Installs libfilecoord (the C API of swift-file-coordination) under PREFIX: the library, its header and its
# pkg-config file, so that C programs build with `cc prog.c $(pkg-config --cflags --libs filecoord)`.
#
#   scripts/install-libfilecoord.sh PREFIX        e.g. ~/.local or /usr/local
#
# Installs:
#   PREFIX/lib/libfilecoord.so.1.0.0 (soname libfilecoord.so.1, the ABI version), libfilecoord.so.1, libfilecoord.so
#   PREFIX/include/filecoord.h
#   PREFIX/lib/pkgconfig/filecoord.pc
# and puts filecoordd and fccoord in PREFIX/bin (the library starts filecoordd on demand; it finds it on PATH).
#
# The library links Swift's runtime (libswiftCore, Foundation) dynamically: its RUNPATH names the toolchain's
# runtime folder (`swift -print-target-info`, runtimeLibraryPaths), so the toolchain must stay where it is; move it,
# and set LD_LIBRARY_PATH to its usr/lib/swift/linux.
#
# Environment:
#   FC_CONFIGURATION   debug or release (default release; the tests install the debug build they already have).
#   FC_SKIP_BUILD=1    install what is built, without building.
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
version="1.0.0"
abi="${version%%.*}"

command -v patchelf >/dev/null || { echo "error: patchelf is needed (scripts/install-deps.sh installs it)" >&2; exit 1; }
command -v swift >/dev/null || export PATH="$PATH:/opt/swift/usr/bin"

if [[ "${FC_SKIP_BUILD:-0}" != "1" ]]; then
    swift build -c "$configuration" --product filecoord
    swift build -c "$configuration" --product filecoordd
    swift build -c "$configuration" --product fccoord
fi
bin="$(swift build -c "$configuration" --show-bin-path)"

runtime="$(swift -print-target-info | python3 -c 'import json,sys; print(json.load(sys.stdin)["paths"]["runtimeLibraryPaths"][0])')"

mkdir -p "$prefix/lib/pkgconfig" "$prefix/include" "$prefix/bin"
library="$prefix/lib/libfilecoord.so.$version"
install -m 0755 "$bin/libfilecoord.so" "$library"
# Installed libraries carry no debug information (the build folder keeps it); valgrind 3.19 cannot read the DWARF 5
# that Swift's toolchain writes either.
strip --strip-debug "$library"
patchelf --set-soname "libfilecoord.so.$abi" "$library"
patchelf --set-rpath "$runtime" "$library"
ln -sf "libfilecoord.so.$version" "$prefix/lib/libfilecoord.so.$abi"
ln -sf "libfilecoord.so.$abi" "$prefix/lib/libfilecoord.so"
install -m 0644 Languages/c/CFileCoord/include/filecoord.h "$prefix/include/filecoord.h"
sed -e "s|@PREFIX@|$prefix|" -e "s|@VERSION@|$version|" Languages/c/filecoord.pc.in \
    > "$prefix/lib/pkgconfig/filecoord.pc"
install -m 0755 "$bin/filecoordd" "$bin/fccoord" "$prefix/bin/"

echo "installed libfilecoord $version under $prefix"
echo "  cc prog.c \$(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs filecoord)"
