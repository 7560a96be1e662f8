#!/usr/bin/env bash
# Regenerates the man pages in docs/man/ (fccoord.1, filecoordd.1, fcdump.1) from the commands' own help, with
# swift-argument-parser's manual generator (its GenerateManual plugin). Run it after changing an option or a help
# text, and commit the result.
#
#   scripts/generate-man-pages.sh
#
# The plugin builds every product (debug, without our strict flags: the next scripts/test.sh builds again).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v swift >/dev/null || export PATH="$PATH:/opt/swift/usr/bin"

# One date for every page: the day of the last commit, so that regenerating unchanged pages changes nothing.
date="$(git log -1 --format=%cs 2>/dev/null || date -u +%Y-%m-%d)"
swift package plugin generate-manual --configuration debug --date "$date" \
    --authors "the swift-file-coordination authors"

mkdir -p docs/man
for tool in fccoord filecoordd fcdump; do
    page="$(find .build/plugins -path "*GenerateManual*" -name "$tool.1" -print -quit)"
    [[ -n "$page" ]] || { echo "error: no $tool.1 generated under .build/plugins" >&2; exit 1; }
    cp "$page" "docs/man/$tool.1"
    echo "docs/man/$tool.1"
done
