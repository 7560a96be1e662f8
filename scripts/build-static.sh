#!/usr/bin/env bash
# Builds what the Debian package (scripts/package-deb.sh) and the Python wheel (Languages/python) ship, with Swift's
# runtime, Foundation and Dispatch linked in statically (issue 43): the programs and libfilecoord then depend only on
# Debian's libraries (glibc, libstdc++, libsqlite3, zlib, libinotifytools), never on a toolchain's folder.
#
#   scripts/build-static.sh OUT                   filecoordd, fccoord, fcdump, libfilecoord, the preload library
#   scripts/build-static.sh OUT library           libfilecoord alone (what the Python wheel carries)
#   scripts/build-static.sh OUT all fc-testhost   also fc-testhost (the Swift app of the installed-package tests)
#
# Puts in OUT:
#   bin/filecoordd bin/fccoord bin/fcdump [bin/fc-testhost]
#   lib/libfilecoord.so.1.0.0 (soname libfilecoord.so.1, no RUNPATH, exports only filecoord_*: Languages/c/exports.map,
#       checked by scripts/check-libfilecoord-symbols.sh), lib/libfilecoord.so.1 -> it
#   lib/libfilecoord-preload.so (C, scripts/build-preload.sh)
# Release builds, in .build-static/ (incremental); what is installed is stripped of debug information.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ $# -lt 1 ]]; then
    echo "usage: $0 OUT [all|library] [fc-testhost]" >&2
    exit 64
fi
out="$1"
parts="${2:-all}"
extra="${3:-}"
command -v swift >/dev/null || export PATH="$PATH:/opt/swift/usr/bin"
mkdir -p "$out/bin" "$out/lib"
out="$(cd "$out" && pwd)"

version="$(scripts/library-version.sh)"
abi="${version%%.*}"
scratch="$PWD/.build-static"
toolchain="$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")"
static_resources="$toolchain/lib/swift_static"
[[ -d "$static_resources/linux" ]] || { echo "error: no static Swift runtime at $static_resources/linux" >&2; exit 1; }
# --static-swift-stdlib compiles against the static runtime's modules and links executables with -static-stdlib.
# SwiftPM links a dynamic library without -static-stdlib, though, and then cannot find the static Foundation's
# parts. So SwiftPM's own link of libfilecoord is only made to succeed (the resource folder pointed at the static
# runtime, the libraries the static runtime needs named after everything else) for the list of objects it writes,
# and the library installed is linked again below by the Swift driver with -static-stdlib, which orders the static
# archives right (SwiftPM's link leaves Foundation's references to ICU unresolved; it is never installed).
build=(swift build -c release --scratch-path "$scratch" --static-swift-stdlib
    -Xswiftc -resource-dir -Xswiftc "$static_resources")
bin="$("${build[@]}" --show-bin-path)"

runtime_libraries=()
for name in stdc++ dispatch BlocksRuntime dl pthread m; do runtime_libraries+=(-Xlinker "-l$name"); done
"${build[@]}" --product filecoord "${runtime_libraries[@]}"
library="$out/lib/libfilecoord.so.$version"
# -z defs: every reference resolved here or in a Debian library the loader finds (none left to the program).
swiftc -emit-library -static-stdlib -target "$(uname -m)-unknown-linux-gnu" \
    @"$bin/filecoord.product/Objects.LinkFileList" \
    -Xlinker --gc-sections -Xlinker -z -Xlinker defs \
    -Xlinker --version-script="$PWD/Languages/c/exports.map" -Xlinker -soname="libfilecoord.so.$abi" \
    -o "$library"
strip --strip-unneeded "$library"
ln -sf "libfilecoord.so.$version" "$out/lib/libfilecoord.so.$abi"
scripts/check-libfilecoord-symbols.sh "$library"

if [[ "$parts" == "all" ]]; then
    for product in filecoordd fccoord fcdump $extra; do
        "${build[@]}" --product "$product"
        install -m 0755 "$bin/$product" "$out/bin/$product"
        strip --strip-unneeded "$out/bin/$product"
    done
    install -m 0644 "$(scripts/build-preload.sh)" "$out/lib/libfilecoord-preload.so"
fi
echo "built into $out: $(cd "$out" && find . -type f | sort | tr '\n' ' ')"
