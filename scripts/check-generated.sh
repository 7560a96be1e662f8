#!/usr/bin/env bash
# Checks that committed generated code is current (issue 38). Builds no Swift; exits non-zero on the first stale part.
#
#   scripts/check-generated.sh
#
# 1. The preload's protobuf-c code (Languages/preload/generated/filecoord.pb-c.{h,c}): regenerated from
#    Sources/FCProtocol/filecoord.proto by scripts/generate-preload-protocol.sh into a temporary folder and compared
#    byte for byte with the committed files. Needs protoc-c (Debian's protobuf-c-compiler, which
#    scripts/install-deps.sh installs). A different protobuf-c version writes a different version line: the
#    committed files are protobuf-c 1.4.1's (Debian 12).
# 2. The Python binding's cffi declarations (Languages/python/src/filecoord/_library.py, CDEF) against
#    Languages/c/CFileCoord/include/filecoord.h, and the numbers the binding restates in Python:
#    scripts/check-cffi-declarations.py.
#
# Not checked here: the Swift protobuf code (Sources/FCProtocol/Generated/filecoord.pb.swift). Regenerating it needs
# protoc-gen-swift built from the swift-protobuf version Package.swift resolves, and this check builds no Swift:
# scripts/check-generated-swift.sh does it, after CI's strict build.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf '[check-generated] %s\n' "$*"; }

# 1. protobuf-c.
protoc_c="${PROTOC_C:-protoc-c}"
if ! command -v "$protoc_c" >/dev/null 2>&1; then
    echo "[check-generated] error: $protoc_c not found; install protobuf-c-compiler (scripts/install-deps.sh does)" >&2
    exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# The generator writes into Languages/preload/generated of the tree it runs in: run it in a copy of the files it reads.
mkdir -p "$tmp/tree/scripts" "$tmp/tree/Sources/FCProtocol"
cp scripts/generate-preload-protocol.sh "$tmp/tree/scripts/"
cp Sources/FCProtocol/filecoord.proto "$tmp/tree/Sources/FCProtocol/"
PROTOC_C="$protoc_c" bash "$tmp/tree/scripts/generate-preload-protocol.sh" 2>"$tmp/generate.log" || {
    cat "$tmp/generate.log" >&2
    echo "[check-generated] error: scripts/generate-preload-protocol.sh failed" >&2
    exit 1
}
stale=0
for file in filecoord.pb-c.h filecoord.pb-c.c; do
    committed="Languages/preload/generated/$file"
    fresh="$tmp/tree/Languages/preload/generated/$file"
    if [[ ! -f "$committed" ]]; then
        echo "[check-generated] error: $committed is missing" >&2
        stale=1
    elif ! cmp -s "$fresh" "$committed"; then
        echo "[check-generated] error: $committed is not what $("$protoc_c" --version | head -n 1) makes of" \
            "Sources/FCProtocol/filecoord.proto; run scripts/generate-preload-protocol.sh and commit the result:" >&2
        diff -u "$committed" "$fresh" | head -n 40 >&2 || true
        stale=1
    fi
done
[[ $stale -eq 0 ]] || exit 1
log "Languages/preload/generated is current ($("$protoc_c" --version | head -n 1))"

# 2. cffi declarations.
python3 scripts/check-cffi-declarations.py

log "Sources/FCProtocol/Generated/filecoord.pb.swift is checked by scripts/check-generated-swift.sh (a Swift build)"
