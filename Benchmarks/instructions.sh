#!/usr/bin/env bash
# Instructions per coordinated call, counted by valgrind's callgrind in the client's process and in the daemon's
# (issue 23). Time cannot be gated on a shared machine; instruction counts repeat for the same binary and input, so
# CI gates them as it gates malloc counts.
#
#     Benchmarks/instructions.sh            count, and check against Benchmarks/Thresholds/<swift>/instructions.tsv
#     Benchmarks/instructions.sh --record   count, and write that file (commit it with the change that moved them)
#
# Each mode (read and write through the daemon, a read under a lease, a write whose file another presenter of the
# client relinquishes at once: one request to a presenter and its reply, issue 39) runs twice, with N1 and N2 calls after the
# same warm-up; (total(N2) - total(N1)) / (N2 - N1) is the count per call, so start-up, warm-up and exit cancel
# out. A count passes within TOLERANCE_PERCENT of its threshold, both ways (an improvement is recorded, as malloc
# thresholds are): the counts repeat exactly on one machine, and the margin covers glibc picking other string and
# memory routines on another CPU. The driver is Benchmarks/Tools/InstructionCounts (release build, debug
# information stripped: valgrind 3.19 cannot read Swift 6.3's).
set -euo pipefail
shopt -s inherit_errexit  # A failure inside $(...) fails the script too.

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
record=0
[[ "${1:-}" == "--record" ]] && record=1
n1=200
n2=1200
tolerance_percent=3
# Both processes on one CPU: the daemon then reads the client's finish and its next request in the same way in every
# run (on two CPUs it read them together or apart as timing fell, and its count moved by 4%).
cpu="$(taskset -pc $$ | sed -E 's/.*: ([0-9]+).*/\1/')"

command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed" >&2; exit 1; }
swift_mm="$(swift --version 2>/dev/null | sed -nE 's/.*Swift version ([0-9]+\.[0-9]+).*/\1/p' | head -n 1)"
thresholds="$here/Thresholds/${swift_mm:-unknown}/instructions.tsv"

swift build -c release --package-path "$here" --product InstructionCounts >&2
work="$(mktemp -d /tmp/fc-instructions.XXXXXX)"
trap 'rm -rf "$work"' EXIT
cp "$(swift build -c release --package-path "$here" --show-bin-path)/InstructionCounts" "$work/driver"
strip -g "$work/driver"
export SWIFT_DETERMINISTIC_HASHING=1  # The same hash seeds, so the same dictionary probes, in every run.

# The total callgrind printed in the log `$1` ("Collected : N").
collected() {
    sed -nE 's/.*Collected : ([0-9]+).*/\1/p' "$1" | tail -n 1
}

# Total instructions of a command under callgrind, from its summary line.
count() {
    local out="$1"
    shift
    taskset -c "$cpu" valgrind --tool=callgrind --callgrind-out-file="$out" "$@" 2>"$out.log" >/dev/null \
        || { cat "$out.log" >&2; return 1; }
    collected "$out.log"
}

# One run: a daemon under callgrind, a client of MODE making N calls under callgrind. Prints "CLIENT DAEMON".
run() {
    local mode="$1" n="$2" dir="$work/$1-$2"
    mkdir -m 700 "$dir"
    mkfifo "$dir/control"
    # The daemon's path (read, write) is measured with a daemon that grants no lease, the client as a user runs it.
    local leases=()
    [[ "$mode" == leased-read ]] || leases=(no-leases)
    taskset -c "$cpu" valgrind --tool=callgrind --callgrind-out-file="$dir/daemon.out" "$work/driver" daemon \
        "$dir/socket" "${leases[@]}" <"$dir/control" >"$dir/daemon.stdout" 2>"$dir/daemon.log" &
    local daemon=$!
    exec 8>"$dir/control"
    local waited=0
    until grep -q ready "$dir/daemon.stdout" 2>/dev/null; do
        kill -0 "$daemon" 2>/dev/null || { cat "$dir/daemon.log" >&2; return 1; }
        ((waited++ < 600)) || {
            echo "the daemon did not start" >&2
            kill "$daemon" 2>/dev/null || true
            return 1
        }
        sleep 0.1
    done
    local client
    client="$(count "$dir/client.out" "$work/driver" client "$dir/socket" "$mode" "$n")" || {
        exec 8>&-
        kill "$daemon" 2>/dev/null || true
        return 1
    }
    exec 8>&-  # The daemon stops when its standard input closes.
    wait "$daemon" || { cat "$dir/daemon.log" >&2; return 1; }
    echo "$client $(collected "$dir/daemon.log")"
}

# Fails unless every argument is a count of instructions.
numbers() {
    local value
    for value in "$@"; do
        [[ "$value" =~ ^[0-9]+$ ]] || { echo "instructions.sh: no instruction count in '$*'" >&2; exit 1; }
    done
}

results=()
for mode in read write leased-read presented-write; do
    first="$(run "$mode" "$n1")"
    second="$(run "$mode" "$n2")"
    read -r c1 d1 <<<"$first"
    read -r c2 d2 <<<"$second"
    numbers "$c1" "$d1" "$c2" "$d2"
    client=$(((c2 - c1) / (n2 - n1)))
    daemon=$(((d2 - d1) / (n2 - n1)))
    results+=("$mode-client $client")
    # Under a lease the daemon does nothing per call: checked below, not gated (its count is 0 give or take a few).
    [[ "$mode" == leased-read ]] || results+=("$mode-daemon $daemon")
    printf '%-15s client %8d instructions per call   daemon %8d\n' "$mode" "$client" "$daemon"
    [[ "$mode" != leased-read ]] || leased_daemon="$daemon"
done

# A lease that was not granted would count a daemon round trip as a leased read: refuse that measurement.
if ((leased_daemon > 100 || leased_daemon < -100)); then
    echo "instructions.sh: the leased reads cost the daemon $leased_daemon instructions each: the lease was not" \
        "granted" >&2
    exit 1
fi

if ((record)); then
    mkdir -p "$(dirname "$thresholds")"
    {
        echo "# Instructions per coordinated call (Benchmarks/instructions.sh --record; valgrind callgrind)."
        printf '%s\n' "${results[@]}" | tr ' ' '\t'
    } >"$thresholds"
    echo "recorded ${thresholds#"$here"/}"
    exit 0
fi

[[ -f "$thresholds" ]] || { echo "instructions.sh: no thresholds at $thresholds (run with --record)" >&2; exit 1; }
failed=0
for line in "${results[@]}"; do
    read -r name value <<<"$line"
    expected="$(awk -v name="$name" '$1 == name { print $2 }' "$thresholds")"
    if [[ -z "$expected" ]]; then
        echo "FAIL $name: $value, no threshold"
        failed=1
        continue
    fi
    margin=$((expected * tolerance_percent / 100))
    if ((value > expected + margin)); then
        echo "FAIL $name: $value instructions per call, above $expected + ${tolerance_percent}%"
        failed=1
    elif ((value < expected - margin)); then
        echo "FAIL $name: $value instructions per call, below $expected - ${tolerance_percent}%: an improvement;" \
            "record it (Benchmarks/instructions.sh --record)"
        failed=1
    else
        echo "ok   $name: $value (threshold $expected)"
    fi
done
exit "$failed"
