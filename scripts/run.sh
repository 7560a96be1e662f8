#!/usr/bin/env bash
# Builds and runs fcdemo, the demonstration of the in-process arbiter: the README's run command.
#
#   scripts/run.sh [fcdemo arguments]
#
# Installs what is missing first (scripts/install-deps.sh). Build output goes to stderr, so stdout is only what
# fcdemo prints. Exits with fcdemo's status.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Sourced, so that a PATH fix for /opt/swift applies to the commands below.
. scripts/install-deps.sh

# Debug, not release: the demo does microseconds of work, so the optimiser buys nothing visible, while a debug
# build is quicker from scratch and shares .build/debug with `swift build`.
echo "==> Building fcdemo (debug)" >&2
swift build --product fcdemo >&2

bin_path="$(swift build --show-bin-path)"
echo "==> Running fcdemo $*" >&2
exec "$bin_path/fcdemo" "$@"
