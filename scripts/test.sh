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
#   FC_CLUSTER_SIM_SCHEDULES, FC_CLUSTER_SIM_SEED   the same for the cluster simulator (host leases, issue 40).
#   FC_REQUIRE_EXFAT=1 the exFAT tests fail instead of skipping where no exFAT volume can be mounted (CI sets it).
#
# Every `swift test` run here is a phase that fails when it ran no test (scripts/test-phase.sh).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() { printf '\n==> %s\n' "$*"; }

step "Checking dependencies"
# Sourced, so that a PATH fix for /opt/swift applies to the commands below.
. scripts/install-deps.sh

# Built once, with these flags; every `swift test` below is `--skip-build`. Without it each one planned the build
# again whenever its command or environment differed from the last build's (`swift build` against `swift test`,
# FILECOORD_LEASES, FILECOORD_ARBITER), 13-18 s each in CI with nothing to compile.
. scripts/build-flags.sh
build_flags=("${fc_build_flags[@]}")
# test_phase: each `swift test` below fails when it ran no test (scripts/test-phase.sh).
. scripts/test-phase.sh

step "Building (tests included, warnings are errors)"
swift build --build-tests "${build_flags[@]}"

# The end-to-end tests start a daemon each, over a hundred at once at their peak (127 counted here), and each
# daemon's watcher holds an inotify instance: Linux's default of 128 per user runs out, and a watcher fails with
# EMFILE. As root, the limit is raised on this machine; otherwise the run says why it may fail.
instances=/proc/sys/fs/inotify/max_user_instances
if [[ -r $instances ]] && (($(cat "$instances") < 1024)); then
    if [[ $(id -u) -eq 0 ]] && { echo 1024 > "$instances"; } 2>/dev/null; then
        echo "fs.inotify.max_user_instances raised to 1024 for the end-to-end tests' daemons"
    else
        echo "warning: fs.inotify.max_user_instances is $(cat "$instances"); the end-to-end tests may run out" >&2
    fi
fi

for var in FC_SIM_SCHEDULES FC_SIM_SEED FC_CLUSTER_SIM_SCHEDULES FC_CLUSTER_SIM_SEED FC_REQUIRE_EXFAT; do
    if [[ -n "${!var:-}" ]]; then
        export "${var?}"
        echo "$var=${!var}"
    fi
done

# The library's tests talk to a real filecoordd, started on demand by the library itself (as an app's would be), on
# a private socket so that no other daemon is disturbed; it is stopped at the end, whatever happened.
run_dir="$(mktemp -d /tmp/fc-test-XXXXXX)"
export FILECOORDD_SOCKET="$run_dir/socket"
# One malloc arena for the test processes. Swift 6.3's Foundation (swift-corelibs-foundation, fixed upstream in
# swiftlang/swift-corelibs-foundation#5472, in no release yet) reads 256 bytes of every /proc/self/fd entry in each
# Process.run(), past the end of glibc's directory buffer; when that buffer is the last thing in a thread arena's
# mapped heap, the test process crashes ("Bad pointer dereference" at a page boundary, in Process.run(), once in a
# local clean-clone CI run of about ten). The main arena grows its heap with slack beyond each allocation (M_TOP_PAD),
# so the over-read stays in mapped memory. The tests' own children inherit it; no test measures time with it.
export MALLOC_ARENA_MAX=1
# At most 32 Swift Testing tests at once (Swift Testing's experimental width; unset, every test starts at once). The
# end-to-end tests wait on other processes far more than they compute: 32 keep two cores busy, and a full run took
# 113 s here against 122 s unbounded (797 tests), while the peak of about 130 daemons and their hosts on two cores,
# which made a slower CI machine miss timed expectations (stop 53), is gone. A caller's own value is kept.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-32}"
export FILECOORDD_PATH="$(swift build --show-bin-path)/filecoordd"
stop_daemon() {
    if [[ -f "$FILECOORDD_SOCKET.lock" ]]; then
        pid="$(tr -dc '0-9' < "$FILECOORDD_SOCKET.lock")"
        [[ -n "$pid" ]] && kill "$pid" 2>/dev/null || true
    fi
    rm -rf "$run_dir"
}
trap stop_daemon EXIT

if [[ $# -gt 0 ]]; then
    step "Running tests: $*"
    test_phase swift test --skip-build "$@"
    exit 0
fi

# Swift Testing runs tests on Swift's cooperative pool (one thread per core): tests that block threads on purpose
# (synchronous coordinated calls, waits for other processes) and the simulator's CPU-bound schedules would starve the
# async work of the tests that need it. So the async ones run on their own, and the simulator last.
step "Running tests (the library through filecoordd at $FILECOORDD_SOCKET, with leases: docs/SEMANTICS.md §13)"
test_phase swift test --skip-build --skip SimulatorTests --skip AsyncAPITests --skip SourceCompatibilityTests

step "Running them again without leases (FILECOORD_LEASES=0: every claim through the daemon)"
FILECOORD_LEASES=0 test_phase swift test --skip-build --skip SimulatorTests --skip AsyncAPITests \
    --skip SourceCompatibilityTests

step "Running the async API and source-compatibility tests on their own"
test_phase swift test --skip-build --filter 'AsyncAPITests|SourceCompatibilityTests'

step "Running the seeded simulator (SimulatorTests)"
test_phase swift test --skip-build --filter SimulatorTests

# Code written as for macOS, in both language modes, in a package of its own: there, as in an app and as on macOS,
# a sendability mismatch with Apple's `@preconcurrency` API is a warning, not an error (Tests/PortedCode/Package.swift).
step "Building and running the ported macOS code in the Swift 5 and Swift 6 language modes (Tests/PortedCode)"
# Its build folder is beside the main one (.build-ported), not inside Tests/, which holds only our own sources.
ported=(--package-path Tests/PortedCode --scratch-path .build-ported)
swift build "${ported[@]}" --build-tests
test_phase swift test "${ported[@]}" --skip-build
FILECOORD_ARBITER=in-process test_phase swift test "${ported[@]}" --skip-build

# The same library tests once more with the in-process arbiter, the fallback when no daemon can be had.
step "Running the library's tests again with the in-process arbiter"
FILECOORD_ARBITER=in-process test_phase swift test --skip-build --filter FileCoordinationTests \
    --skip AsyncAPITests
FILECOORD_ARBITER=in-process test_phase swift test --skip-build \
    --filter 'AsyncAPITests|SourceCompatibilityTests'

# Other languages (issue 24): libfilecoord installed as a newcomer would, its C test under valgrind, the Python
# bindings with pytest across processes and languages (scripts/test-languages.sh).
step "Running the C and Python tests of libfilecoord (scripts/test-languages.sh)"
bash scripts/test-languages.sh
