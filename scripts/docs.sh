#!/usr/bin/env bash
# Builds the DocC documentation of FileCoordination and FileCoordinationDocument with swift-docc-plugin, warnings as
# errors (an unresolved symbol link or a broken article reference fails it), after checking that every public symbol
# has a doc comment (scripts/check-doc-coverage.py). Run by .ci/run.
#
#   scripts/docs.sh [--output DIR]     archives in DIR (default .build/docs)
#
# The plugin builds the targets for their symbol graphs with scripts/build-flags.sh's flags, so that after
# scripts/test.sh it compiles nothing again.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v swift >/dev/null 2>&1 && [[ -x /opt/swift/usr/bin/swift ]]; then
    export PATH="$PATH:/opt/swift/usr/bin"
fi
output=".build/docs"
if [[ "${1:-}" == "--output" && -n "${2:-}" ]]; then output="$2"; fi
. scripts/build-flags.sh

echo "==> Every public symbol documented"
swift package "${fc_build_flags[@]}" dump-symbol-graph --minimum-access-level public >/dev/null
python3 scripts/check-doc-coverage.py "$(swift build "${fc_build_flags[@]}" --show-bin-path)/../symbolgraph" \
    FileCoordination FileCoordinationDocument

mkdir -p "$output"
for target in FileCoordination FileCoordinationDocument; do
    echo "==> DocC: $target"
    swift package "${fc_build_flags[@]}" --allow-writing-to-directory "$output" \
        generate-documentation --target "$target" --warnings-as-errors --output-path "$output/$target.doccarchive"
done
