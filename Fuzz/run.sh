#!/usr/bin/env bash
# Builds the libFuzzer targets (Fuzz/Package.swift) and runs each for a bounded time on its committed corpus.
#
#   Fuzz/run.sh [SECONDS] [TARGET...]     default 30 s each, every target
#
# Targets: frame-decoder, handshake, version-store-repair (Swift, Fuzz/Sources) and preload-frames (C: the preload
# library's frame reader, Fuzz/preload, built with the toolchain's clang under AddressSanitizer and
# UndefinedBehaviorSanitizer; needs Debian's libprotobuf-c-dev). New inputs libFuzzer finds go to a scratch corpus
# (.build-fuzz/corpus/<target>), never into the committed one; a crash leaves its input in .build-fuzz/crashes/ and
# fails the run. Turn every crash into a regression test (see README, "Fuzzing"). For a long run:
#   Fuzz/run.sh 3600 frame-decoder
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then export PATH="$PATH:/opt/swift/usr/bin"; fi
seconds="${1:-30}"
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(frame-decoder handshake version-store-repair preload-frames)

scratch="$PWD/.build-fuzz"
build=(--package-path Fuzz --scratch-path "$scratch/build" -c debug
    -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library)
swift build "${build[@]}"
bin="$(swift build "${build[@]}" --show-bin-path)"
mkdir -p "$scratch/crashes"
# The C target: the preload's client sources without its wrappers (interpose.c, names.c would wrap the fuzzer's own
# calls), and its protobuf-c code.
preload=Languages/preload
"$(dirname "$(command -v swift)")/clang" -fuse-ld=bfd -g -O1 -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined $(pkg-config --cflags libprotobuf-c) -o "$bin/fuzz-preload-frames" \
    Fuzz/preload/fuzz-preload-frames.c "$preload"/src/{claims,client,connection,descriptors,frames,leases,paths,real}.c \
    "$preload/generated/filecoord.pb-c.c" -lprotobuf-c -ldl -lpthread
for target in "${targets[@]}"; do
    corpus="$scratch/corpus/$target"
    mkdir -p "$corpus"
    echo "fuzzing $target for ${seconds}s (seeds: Fuzz/Corpus/$target)"
    "$bin/fuzz-$target" "$corpus" "Fuzz/Corpus/$target" -max_total_time="$seconds" -print_final_stats=1 \
        -artifact_prefix="$scratch/crashes/$target-" -max_len=4096 -timeout=10 -rss_limit_mb=2048
done
