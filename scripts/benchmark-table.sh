#!/usr/bin/env bash
# Runs the end-to-end benchmarks once and prints the README's table (docs: README, "Where the end-to-end numbers
# stand"): each benchmark's p50 and its ratio to the baseline measured in the same run, the 8-client throughput with
# the clients' and the daemon's CPU per claim, and the client's mallocs per call.
#
#   scripts/benchmark-table.sh            # about 2 minutes once built (the first run builds the suite)
#
# The table is built by the suite itself (Benchmarks/Benchmarks/EndToEndBenchmarks/RunTable.swift, printed by the
# last benchmark of the run to standard error); this script keeps that part, and adds the mallocs per call of the
# client's hot path from the benchmark tool's own output. Wall time is reported, never gated. The watcher's pair
# (rawInotifyDelivery, uncoordinatedChangeToPresenter) is not run: its ratio has a table of its own.
#
# Environment:
#   FC_BENCH_LOG   keep the whole output there (default: a temporary file, removed at the end).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
if ! command -v swift >/dev/null && [[ -x /opt/swift/usr/bin/swift ]]; then
    PATH="/opt/swift/usr/bin:$PATH"
fi

log="${FC_BENCH_LOG:-}"
if [[ -z "$log" ]]; then
    log="$(mktemp /tmp/fc-bench-table-XXXXXX.log)"
    trap 'rm -f "$log"' EXIT
fi

echo "running the end-to-end benchmarks (output in $log) ..." >&2
if ! swift package --package-path Benchmarks benchmark --filter 'EndToEnd\..*' \
    --skip 'EndToEnd\.(rawInotifyDelivery|uncoordinatedChangeToPresenter)' --no-progress >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "error: the benchmark run failed (whole output in $log)" >&2
    trap - EXIT
    exit 1
fi

table="$(sed -n '/==== EndToEnd README table (begin) ====/,/==== EndToEnd README table (end) ====/p' "$log" |
    sed '1d;$d')"
if [[ -z "$table" ]]; then
    echo "error: the run printed no table (did every benchmark of the suite run?); whole output in $log" >&2
    trap - EXIT
    exit 1
fi
echo "$table"

# The tool's text output: a table per benchmark (box-drawing characters), whose `Malloc (total) *` row holds p0,
# p25, p50, ... per call (`*`: scaled to one call of the sample's 1,000; `(K)` would mean thousands).
echo
echo "| benchmark | mallocs per call (p50; this process only, the daemon in another) |"
echo "|---|---|"
awk -F'│' '
    /^EndToEnd\.clientHotPath\.[A-Za-z]+$/ { name = $0; next }
    name != "" && /Malloc \(total\)/ {
        p50 = $5
        gsub(/ /, "", p50)
        if ($2 ~ /\(K\)/) p50 = p50 * 1000
        printf "| `%s` | %s |\n", name, p50
        name = ""
    }
' "$log"
