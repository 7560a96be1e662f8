#!/usr/bin/env bash
# Regenerates Languages/preload/generated/filecoord.pb-c.{h,c} from Sources/FCProtocol/filecoord.proto with protoc-c
# (Debian's protobuf-c-compiler), for the preload library (Languages/preload/README.md).
#
#   scripts/generate-preload-protocol.sh
#
# The generated C is committed, like the Swift (docs/PROTOCOL.md §7): the build does not run this. Run it after
# editing the .proto, together with scripts/generate-protocol.sh, and commit the three files together. CI runs it in
# a temporary copy and fails when the committed files differ (scripts/check-generated.sh).
#
# protoc-c 1.4 (Debian 12) refuses proto3 `optional`, so it reads a copy of the .proto with that keyword removed.
# That changes nothing on the wire for what the library sends and reads: a proto3 `optional` field is encoded like
# a plain one when it is set, and the library sets such fields (`RequestClaim.timeout_milliseconds`) only to
# non-zero values; a plain scalar is omitted when zero, as an unset optional is.
#
# Environment:
#   PROTOC_C    the protoc-c to use (default: `protoc-c` on PATH; install Debian's protobuf-c-compiler).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

protoc_c="${PROTOC_C:-protoc-c}"
if ! command -v "$protoc_c" >/dev/null 2>&1; then
    echo "[generate-preload-protocol] error: $protoc_c not found; install protobuf-c-compiler" >&2
    exit 1
fi
out_dir="Languages/preload/generated"
mkdir -p "$out_dir"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
sed -E 's/^([[:space:]]*)optional[[:space:]]+/\1/' Sources/FCProtocol/filecoord.proto >"$tmp/filecoord.proto"
"$protoc_c" --proto_path="$tmp" --c_out="$out_dir" "$tmp/filecoord.proto"
echo "[generate-preload-protocol] wrote $out_dir/filecoord.pb-c.h and .c ($("$protoc_c" --version | head -1))" >&2
