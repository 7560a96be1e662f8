#!/usr/bin/env bash
# What libfilecoord-preload.so (Languages/preload) costs a program, each number against the same program without the
# library in the same run, with a private filecoordd answering (issue 25). Prints a table and ratios; no threshold
# (wall time is never gated in CI).
#
#   Benchmarks/preload/preload-overhead.sh [FILES] [OPENS]
#
#   cp -r of FILES small files (default 10,000) into a new folder (new files: no claims), and over an existing copy
#   (one write claim per file); OPENS (default 2,000) open-write-close of one existing file, against the bare Unix
#   socket round trip (the least a claim can add; the target is at most 2 round trips added per write-intent open).
#
# Environment: FILECOORDD (default: .build/release/filecoordd, else .build/debug/filecoordd).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
files="${1:-10000}"
opens="${2:-2000}"
library="$(scripts/build-preload.sh)"
daemon="${FILECOORDD:-}"
if [[ -z "$daemon" ]]; then
    for candidate in .build/release/filecoordd .build/debug/filecoordd; do
        [[ -x "$candidate" ]] && { daemon="$candidate"; break; }
    done
fi
[[ -x "$daemon" ]] || { echo "error: no filecoordd; run swift build, or set FILECOORDD" >&2; exit 1; }

work="$(mktemp -d /tmp/fc-preload-bench-XXXXXX)"
daemon_pid=""
cleanup() {
    [[ -n "$daemon_pid" ]] && kill "$daemon_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

cc -O2 -o "$work/probe" Benchmarks/preload/open-write-close.c
export FILECOORDD_SOCKET="$work/run/socket"
"$daemon" --foreground --socket "$FILECOORDD_SOCKET" >"$work/filecoordd.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [[ -S "$FILECOORDD_SOCKET" ]] && break; sleep 0.1; done
[[ -S "$FILECOORDD_SOCKET" ]] || { echo "error: filecoordd did not start:" >&2; cat "$work/filecoordd.log" >&2; exit 1; }

mkdir "$work/source"
(cd "$work/source" && for i in $(seq "$files"); do printf 'file %d\n' "$i" >"f$i.txt"; done)

# Seconds taken by a command (wall clock, one run).
timed() {
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

rm -rf "$work/new-plain" "$work/new-preload"
cp_new_plain=$(timed cp -r "$work/source" "$work/new-plain")
cp_new_preload=$(timed env LD_PRELOAD="$library" cp -r "$work/source" "$work/new-preload")
cp_over_plain=$(timed cp -r "$work/source/." "$work/new-plain")
cp_over_preload=$(timed env LD_PRELOAD="$library" cp -r "$work/source/." "$work/new-preload")

echo x >"$work/one.txt"
owc_plain=$("$work/probe" open-write-close "$work/one.txt" "$opens" | awk '{print $2}')
owc_preload=$(LD_PRELOAD="$library" "$work/probe" open-write-close "$work/one.txt" "$opens" | awk '{print $2}')
round_trip=$("$work/probe" round-trip "$opens" | awk '{print $2}')
added=$((owc_preload - owc_plain))

printf '%-48s %12s %12s %8s\n' "benchmark" "plain" "preloaded" "ratio"
printf '%-48s %11.3fs %11.3fs %7sx\n' "cp -r $files small files into a new folder" "$cp_new_plain" "$cp_new_preload" \
    "$(ratio "$cp_new_preload" "$cp_new_plain")"
printf '%-48s %11.3fs %11.3fs %7sx\n' "cp -r $files small files over existing ones" "$cp_over_plain" \
    "$cp_over_preload" "$(ratio "$cp_over_preload" "$cp_over_plain")"
printf '%-48s %10sns %10sns %7sx\n' "open-write-close of one file" "$owc_plain" "$owc_preload" \
    "$(ratio "$owc_preload" "$owc_plain")"
printf '%-48s %10sns\n' "bare Unix socket round trip" "$round_trip"
printf '%-48s %10sns %7s round trips (target: at most 2)\n' "added per write-intent open" "$added" \
    "$(ratio "$added" "$round_trip")"
