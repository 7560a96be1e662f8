# Sourced by .ci/run: builds that run beside the phases in front of the one that needs them, taking only the CPU those
# phases leave, and waited for by that phase.
#
#   background_build NAME COMMAND...   starts COMMAND, its output to a log of its own
#   await_background_build NAME        raises NAME to the phases' weight, waits for it, prints its log; its exit status
#   end_background_builds              ends every build still running (on exit)
#
# How a build is kept behind the phases. nice alone does not do it: swift-build starts its compilers at nice 0
# whatever its own nice, and a session of its own (setsid) is an autogroup of its own
# (/proc/sys/kernel/sched_autogroup_enabled), which shares the cores evenly with the phases' whatever the nice. So each
# build runs in a cpu cgroup of its own with the least weight (cgroup v2 `cpu.weight` 1, or v1 `cpu.shares` 2, against
# the phases' 100 and 1024), which every process it starts stays in; where no cgroup can be made (not root, a read-only
# /sys/fs/cgroup) it runs at nice 19 alone, and says so. Each build leads a process group of its own, in this session.

declare -A background_pid=() background_log=() background_start=() background_cgroup=()

# A cpu cgroup for the build NAME at the least weight: its folder, or nothing.
background_make_cgroup() {
    local name="fc-ci-$1-$$" root=/sys/fs/cgroup
    if [[ -f $root/cgroup.controllers ]] && grep -qw cpu "$root/cgroup.controllers"; then
        grep -qw cpu "$root/cgroup.subtree_control" || echo +cpu > "$root/cgroup.subtree_control" 2> /dev/null ||
            return 0
        mkdir "$root/$name" 2> /dev/null && echo 1 > "$root/$name/cpu.weight" 2> /dev/null && echo "$root/$name"
    elif [[ -f $root/cpu/cpu.shares ]]; then
        mkdir "$root/cpu/$name" 2> /dev/null && echo 2 > "$root/cpu/$name/cpu.shares" 2> /dev/null &&
            echo "$root/cpu/$name"
    fi
    return 0
}

# Gives the cgroup DIR the phases' own weight.
background_raise() {
    if [[ -f $1/cpu.weight ]]; then
        echo 100 > "$1/cpu.weight" 2> /dev/null || true
    elif [[ -f $1/cpu.shares ]]; then
        echo 1024 > "$1/cpu.shares" 2> /dev/null || true
    fi
}

background_build() {
    local name="$1" how
    shift
    background_log[$name]="$(mktemp "/tmp/fc-ci-background-$name-XXXXXX.log")"
    background_cgroup[$name]="$(background_make_cgroup "$name")"
    # Job control on for the launch only: the job leads a process group of its own, in this session.
    set -m
    if [[ -n "${background_cgroup[$name]}" ]]; then
        how="cgroup ${background_cgroup[$name]}"
        bash -c 'echo $$ > "$1/cgroup.procs" 2> /dev/null || true; shift; exec nice -n 19 "$@"' _ \
            "${background_cgroup[$name]}" "$@" > "${background_log[$name]}" 2>&1 &
    else
        how="no cgroup could be made: nice 19 only, which swift-build's compilers do not keep"
        nice -n 19 "$@" > "${background_log[$name]}" 2>&1 &
    fi
    background_pid[$name]=$!
    set +m
    background_start[$name]=$SECONDS
    printf '[%s] building %s beside the phases (%s): %s\n' "$(ts)" "$name" "$how" "$*"
}

await_background_build() {
    local name="$1" rc=0 waited=$SECONDS
    [[ -n "${background_cgroup[$name]}" ]] && background_raise "${background_cgroup[$name]}"
    renice -n 0 -g "${background_pid[$name]}" > /dev/null 2>&1 || true
    wait "${background_pid[$name]}" || rc=$?
    background_pid[$name]=""
    [[ -n "${background_cgroup[$name]}" ]] && { rmdir "${background_cgroup[$name]}" 2> /dev/null || true; }
    cat "${background_log[$name]}"
    rm -f "${background_log[$name]}"
    printf '[%s] %s: built beside the phases in %ds (this phase waited %ds for it), exit %d\n' "$(ts)" "$name" \
        $((SECONDS - background_start[$name])) $((SECONDS - waited)) "$rc"
    return "$rc"
}

end_background_builds() {
    local name
    for name in "${!background_pid[@]}"; do
        [[ -n "${background_pid[$name]}" ]] && kill -- "-${background_pid[$name]}" 2> /dev/null || true
    done
    for name in "${!background_cgroup[@]}"; do
        [[ -n "${background_cgroup[$name]}" ]] && { rmdir "${background_cgroup[$name]}" 2> /dev/null || true; }
    done
}
