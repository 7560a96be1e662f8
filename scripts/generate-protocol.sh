#!/usr/bin/env bash
# Regenerates Sources/FCProtocol/Generated/filecoord.pb.swift from Sources/FCProtocol/filecoord.proto.
#
#   scripts/generate-protocol.sh
#
# The generated Swift is committed (docs/PROTOCOL.md), so neither the build nor CI runs this: run it after
# editing the .proto, and commit both files together. Steps:
#   1. protoc: installs Debian's protobuf-compiler through apt-get if `protoc` is not on PATH (root or sudo).
#   2. protoc-gen-swift: built in release mode from the swift-protobuf checkout this package resolves (the version
#      Package.swift asks for), in its own scratch folder .build-protoc (ignored by .gitignore's `.build-*/`).
#      The first build takes several minutes; later runs reuse it.
#   3. protoc with Visibility=Public and UseAccessLevelOnImports=true, so that the generated file writes
#      `public import SwiftProtobuf` and builds under the package's InternalImportsByDefault.
#
# Environment:
#   PROTOC              the protoc to use (default: `protoc` on PATH, installed if missing).
#   PROTOC_GEN_SWIFT    a protoc-gen-swift to use instead of building one (it must be swift-protobuf's version
#                       from Package.resolved, or the output will differ).
#   FC_GENERATED_OUT    the folder to write filecoord.pb.swift into instead of Sources/FCProtocol/Generated
#                       (scripts/check-generated-swift.sh compares a fresh one with the committed file).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo_root="$PWD"

log() { printf '[generate-protocol] %s\n' "$*" >&2; }

proto_dir="Sources/FCProtocol"
proto_file="filecoord.proto"
out_dir="${FC_GENERATED_OUT:-Sources/FCProtocol/Generated}"
scratch=".build-protoc"

# Swift on PATH (the same fix as scripts/install-deps.sh, without its Debian packages).
if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH="$PATH:/opt/swift/usr/bin"
fi

# 1. protoc.
protoc="${PROTOC:-protoc}"
if ! command -v "$protoc" >/dev/null 2>&1; then
    log "protoc not found: installing Debian's protobuf-compiler"
    as_root=()
    if [[ "$(id -u)" -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || { log "error: not root and no sudo; install protobuf-compiler"; exit 1; }
        as_root=(sudo)
        [[ -t 0 ]] || as_root+=(-n)
    fi
    apt=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0)
    "${apt[@]}" update -qq
    "${apt[@]}" install -y -qq --no-install-recommends protobuf-compiler >&2
    command -v "$protoc" >/dev/null 2>&1 || { log "error: protoc still not found after installing"; exit 1; }
fi
log "protoc: $(command -v "$protoc") ($("$protoc" --version))"

# 2. protoc-gen-swift, from the swift-protobuf version this package resolves.
if [[ -n "${PROTOC_GEN_SWIFT:-}" ]]; then
    plugin="$PROTOC_GEN_SWIFT"
else
    log "building protoc-gen-swift (release) in $scratch; the first build takes several minutes"
    swift build -c release --product protoc-gen-swift --scratch-path "$scratch" >&2
    plugin="$(swift build -c release --product protoc-gen-swift --scratch-path "$scratch" --show-bin-path)/protoc-gen-swift"
fi
[[ -x "$plugin" ]] || { log "error: $plugin is not an executable"; exit 1; }
log "protoc-gen-swift: $plugin ($("$plugin" --version))"

# 3. Generate into a temporary folder, then replace the committed file.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$protoc" \
    --plugin="protoc-gen-swift=$plugin" \
    --proto_path="$proto_dir" \
    --swift_out="$tmp" \
    --swift_opt=Visibility=Public \
    --swift_opt=UseAccessLevelOnImports=true \
    --swift_opt=FileNaming=DropPath \
    "$proto_dir/$proto_file"
mkdir -p "$out_dir"
mv "$tmp/filecoord.pb.swift" "$out_dir/filecoord.pb.swift"
log "wrote ${out_dir}/filecoord.pb.swift ($(wc -l <"$out_dir/filecoord.pb.swift") lines)"
log "done in $repo_root; commit the .proto and the generated file together"
