#!/usr/bin/env bash
# Regenerates the man pages in docs/man/ (fccoord.1, filecoordd.1, fcdump.1) from the commands' own help, with
# swift-argument-parser's manual generator: `generate-manual`, the tool behind its GenerateManual plugin
# (`swift package plugin generate-manual`, which would rebuild the whole package without our flags first). Run it
# after changing an option or a help text, and commit the result.
#
#   scripts/generate-man-pages.sh
#
# Needs the commands built (`swift build`, as scripts/test.sh does); builds the generator in .build-man/.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v swift >/dev/null || export PATH="$PATH:/opt/swift/usr/bin"

swift build --scratch-path .build-man --product generate-manual
generator="$(swift build --scratch-path .build-man --show-bin-path)/generate-manual"
bin="$(swift build --show-bin-path)"

# One date for every page: the day of the last commit, so that regenerating unchanged pages changes nothing.
date="$(git log -1 --format=%cs 2>/dev/null || date -u +%Y-%m-%d)"
mkdir -p docs/man
for tool in fccoord filecoordd fcdump; do
    [[ -x "$bin/$tool" ]] || { echo "error: $bin/$tool is not built (swift build)" >&2; exit 1; }
    "$generator" "$bin/$tool" --output-directory docs/man --date "$date" \
        --authors "the swift-file-coordination authors"
    echo "docs/man/$tool.1"
done
