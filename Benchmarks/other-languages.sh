#!/usr/bin/env bash
# A coordinated read from Python (the bindings over libfilecoord) and through fccoord (a process per read, process
# start included) against the same from Swift, and fccoord against flock(1) running the same command, all in one
# run on one private daemon. Prints the times and their ratios; nothing is gated (README, "Other languages").
#
#   Benchmarks/other-languages.sh [READS]      (default 2000 in-process reads, a tenth as many process starts)
#
# Needs a build (`swift build`) and the Python bindings installed (scripts/test-languages.sh installs them; or
# FILECOORD_LIBRARY pointing at a libfilecoord.so).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v swift >/dev/null || export PATH="$PATH:/opt/swift/usr/bin"
reads="${1:-2000}"
starts=$((reads / 10))
bin="$(swift build --show-bin-path)"

work="$(mktemp -d /tmp/fc-bench-langs-XXXXXX)"
export FILECOORDD_SOCKET="$work/socket" FILECOORDD_PATH="$bin/filecoordd"
unset FILECOORD_ARBITER
export FILECOORD_LIBRARY="${FILECOORD_LIBRARY:-$bin/libfilecoord.so}"
cleanup() {
    [[ -f "$FILECOORDD_SOCKET.lock" ]] && kill "$(tr -dc '0-9' < "$FILECOORDD_SOCKET.lock")" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
item="$work/item.txt"
echo data > "$item"

# Swift: fc-testhost makes the reads in process (a new NSFileCoordinator each); one warm-up round first.
swift_ns="$(printf 'read-loop %s 200\nread-loop %s %s\nexit\n' "$item" "$item" "$reads" | "$bin/fc-testhost" \
    | sed -n 's/^done read-loop [^ ]* //p' | tail -n 1)"

python_ns="$(python3 - "$item" "$reads" <<'PY'
import sys, time, filecoord
path, count = sys.argv[1], int(sys.argv[2])
for _ in range(200):
    with filecoord.reading(path):
        pass
start = time.perf_counter_ns()
for _ in range(count):
    with filecoord.reading(path):
        pass
print((time.perf_counter_ns() - start) // count)
PY
)"

per_run() {  # nanoseconds per run of "$@", $starts times
    local start end
    start=$(date +%s%N)
    for ((i = 0; i < starts; i++)); do "$@" >/dev/null; done
    end=$(date +%s%N)
    echo $(((end - start) / starts))
}
"$bin/fccoord" read "$item" -- true  # warm-up (the daemon is running already)
fccoord_ns="$(per_run "$bin/fccoord" read "$item" -- true)"
flock_ns="$(per_run flock "$item" true)"
true_ns="$(per_run true)"

python3 - "$swift_ns" "$python_ns" "$fccoord_ns" "$flock_ns" "$true_ns" "$reads" "$starts" <<'PY'
import sys
swift, python, fccoord, flock, true, reads, starts = map(int, sys.argv[1:])
print("coordinated read, one run (%d in-process reads, %d process starts):" % (reads, starts))
print("  Swift (NSFileCoordinator, in process)   %9.1f us" % (swift / 1e3))
print("  Python (filecoord.reading, in process)  %9.1f us   %.2fx Swift" % (python / 1e3, python / swift))
print("  fccoord read PATH -- true (a process)   %9.1f us   %.2fx flock(1), %.1fx Swift in process"
      % (fccoord / 1e3, fccoord / flock, fccoord / swift))
print("  flock PATH true (a process)             %9.1f us" % (flock / 1e3))
print("  true alone (the shell's fork and exec)  %9.1f us" % (true / 1e3))
PY
