# Sourced by scripts/test.sh and .ci/run: `test_phase COMMAND...` runs one `swift test` command, shows its output, and
# fails when the command fails or when it ran no test at all. `swift test` passes when its --filter matches nothing
# (a suite renamed, a filter mistyped), and such a phase would check nothing in silence.
#
# Tests are counted from the summaries both test libraries print: Swift Testing's "Test run with N tests" and
# XCTest's "Executed N tests"; a phase passes only when their sum is above 0. Tests skipped by a trait still count
# (Swift Testing reports them as skipped, with the reason, in the same output).

# The number of tests the summaries in the log file "$1" report, summed.
tests_ran() {
    sed -nE 's/.*Test run with ([0-9]+) tests?.*/\1/p; s/.*Executed ([0-9]+) tests?, with.*/\1/p' "$1" |
        awk '{ total += $1 } END { print total + 0 }'
}

test_phase() {
    local log rc=0 count
    log="$(mktemp /tmp/fc-test-phase-XXXXXX)"
    "$@" 2>&1 | tee "$log" || rc=$?
    count="$(tests_ran "$log")"
    rm -f "$log"
    if [[ $rc -ne 0 ]]; then
        return "$rc"
    fi
    if [[ $count -eq 0 ]]; then
        echo "error: this phase ran no test (did a --filter stop matching?): $*" >&2
        return 1
    fi
    echo "test phase: $count tests ran"
}
