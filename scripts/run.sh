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

# Debug, not release: on a fresh clone (2 cores) `swift build --product fcdemo` took 7.2 s against 15.1 s with
# `-c release` (whole-module optimisation of FCCore and FCTestSupport), and the demo does microseconds of work, so
# the optimiser buys nothing visible. The flags are scripts/test.sh's, so the two commands share .build/debug and
# neither recompiles what the other built (different flags would rebuild every module).
echo "==> Building fcdemo" >&2
swift build --product fcdemo -Xswiftc -warnings-as-errors >&2

bin_path="$(swift build --show-bin-path)"
echo "==> Running fcdemo $*" >&2
exec "$bin_path/fcdemo" "$@"
