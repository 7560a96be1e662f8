#!/usr/bin/env bash
# Runs every test of swift-file-coordination: the README's test command.
#
#   scripts/test.sh [extra `swift test` arguments, e.g. --filter SimulatorTests]
#
# Installs what is missing first (scripts/install-deps.sh), then builds everything, tests included, with warnings
# as errors, and runs `swift test`. Exits with the status of the first step that fails.
#
# Environment:
#   FC_SIM_SCHEDULES   how many random schedules the simulator tests run (the test sets its own default when unset).
#   FC_SIM_SEED        replay one simulator seed (see README, "Replaying a simulator failure").
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*"; }

step "Checking dependencies"
# Sourced, so that a PATH fix for /opt/swift applies to the commands below.
. scripts/install-deps.sh

# Same flags for the build and the test run, so that `swift test` finds everything built and compiles nothing again.
build_flags=(-Xswiftc -warnings-as-errors)

step "Building (tests included, warnings are errors)"
swift build --build-tests "${build_flags[@]}"

for var in FC_SIM_SCHEDULES FC_SIM_SEED; do
    if [[ -n "${!var:-}" ]]; then
        export "${var?}"
        echo "$var=${!var}"
    fi
done

step "Running tests"
swift test "${build_flags[@]}" "$@"
