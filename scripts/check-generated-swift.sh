#!/usr/bin/env bash
# Checks that the committed Swift protobuf code (Sources/FCProtocol/Generated/filecoord.pb.swift) is what
# scripts/generate-protocol.sh makes of Sources/FCProtocol/filecoord.proto today; exits non-zero, with the difference,
# when it is not (a .proto edited without regenerating, or the generated file edited by hand).
#
#   scripts/check-generated-swift.sh
#
# Builds protoc-gen-swift in debug mode from the swift-protobuf checkout this package resolves, with the build flags
# of scripts/build-flags.sh, so that after the package's own build only the plugin's two modules are new work (about
# a minute on a fresh machine); CI runs it after its strict build. protoc is Debian's protobuf-compiler, which
# scripts/install-deps.sh installs. scripts/check-generated.sh checks the other generated code and builds nothing.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

log() { printf '[check-generated-swift] %s\n' "$*"; }

if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH="$PATH:/opt/swift/usr/bin"
fi
command -v "${PROTOC:-protoc}" >/dev/null 2>&1 || {
    echo "[check-generated-swift] error: protoc not found; install protobuf-compiler (scripts/install-deps.sh does)" >&2
    exit 1
}

. scripts/build-flags.sh
swift build "${fc_build_flags[@]}" --product protoc-gen-swift >&2
plugin="$(swift build "${fc_build_flags[@]}" --show-bin-path)/protoc-gen-swift"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
FC_GENERATED_OUT="$tmp" PROTOC_GEN_SWIFT="$plugin" bash scripts/generate-protocol.sh 2>"$tmp/generate.log" || {
    cat "$tmp/generate.log" >&2
    echo "[check-generated-swift] error: scripts/generate-protocol.sh failed" >&2
    exit 1
}
committed="Sources/FCProtocol/Generated/filecoord.pb.swift"
if ! cmp -s "$tmp/filecoord.pb.swift" "$committed"; then
    echo "[check-generated-swift] error: $committed is not what $("$plugin" --version) makes of" \
        "Sources/FCProtocol/filecoord.proto; run scripts/generate-protocol.sh and commit the result:" >&2
    diff -u "$committed" "$tmp/filecoord.pb.swift" | head -n 40 >&2 || true
    exit 1
fi
log "$committed is current ($("$plugin" --version), $("${PROTOC:-protoc}" --version))"
