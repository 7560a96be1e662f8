#!/usr/bin/env bash
# The README's run command: the whole story in one run, on a private daemon.
#
#   scripts/run.sh               a sync agent (mirror) and a terminal editor (notes, in tmux) at work on one file:
#                                editing, syncing, another device's change, a conflict made and resolved, a rename,
#                                a deletion, then fcdump; the editor's screen is printed at each step
#   scripts/run.sh --presenters  the two-process demonstration of the callbacks (fc-testhost), as before issue 27
#   scripts/run.sh --core        the narrated walk through the arbiter in one process (fcdemo)
#   scripts/run.sh --cluster     two hosts (two daemons) sharing one folder through a three-member etcd cluster
#                                (scripts/run-cluster.sh; issue 40)
#
# Installs what is missing first (scripts/install-deps.sh; tmux is among the packages). Build output goes to stderr.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Sourced, so that a PATH fix for /opt/swift applies to the commands below.
. scripts/install-deps.sh

# Debug builds with scripts/test.sh's flags, so the two commands share .build/debug.
echo "==> Building filecoordd, fcdump, notes, mirror, fc-testhost and fcdemo" >&2
. scripts/build-flags.sh
swift build "${fc_build_flags[@]}" >&2
bin="$(swift build --show-bin-path)"

if [[ "${1:-}" == "--core" ]]; then
    exec "$bin/fcdemo"
fi
if [[ "${1:-}" == "--cluster" ]]; then
    exec bash scripts/run-cluster.sh "$bin"
fi

demo="$(mktemp -d /tmp/fc-demo-XXXXXX)"
export FILECOORDD_SOCKET="$demo/run/socket"
export FILECOORDD_PATH="$bin/filecoordd"
export FILECOORD_VERSIONS_DIR="$demo/versions"
tmux_socket="$demo/tmux.sock"
cleanup() {
    exec 3>&- 2>/dev/null || true
    tmux -S "$tmux_socket" kill-server 2>/dev/null || true
    [[ -f "$FILECOORDD_SOCKET.lock" ]] && kill "$(tr -dc '0-9' < "$FILECOORDD_SOCKET.lock")" 2>/dev/null || true
    rm -rf "$demo"
}
trap cleanup EXIT

if [[ "${1:-}" == "--presenters" ]]; then
    doc="$demo/Notes.txt"
    echo "first draft" > "$doc"
    echo
    echo "== filecoordd: started on demand by the first process, on $FILECOORDD_SOCKET"
    echo "== editor (process 1) presents $doc; sync (process 2) writes, reads, renames and deletes it"
    echo
    mkfifo "$demo/editor.in"
    "$bin/fc-testhost" < "$demo/editor.in" | sed -u 's/^/  [editor] /' &
    exec 3> "$demo/editor.in"
    echo "present Notes $doc" >&3
    sleep 1
    sync() {
        echo "  [sync]   \$ $*"
        printf '%s\nsleep 300\nexit\n' "$*" | "$bin/fc-testhost" | grep -v '^ready' | sed -u 's/^/  [sync]   /'
        sleep 0.3
    }
    sync write "$doc" second-draft
    sync read "$doc"
    sync move "$doc" "$demo/Notes-final.txt"
    sync write "$demo/Notes-final.txt" deleting
    echo "exit" >&3
    sleep 0.3
    echo
    echo "== filecoordd's log"
    sed 's/^/  /' "$FILECOORDD_SOCKET.log"
    exit 0
fi

# --- The story: this device's folder, the other device's folder, a sync agent between them, an editor on one file.
this="$demo/this-device"
other="$demo/laptop"
mkdir -p "$this" "$other"
printf 'Shopping list\n' > "$this/notes.txt"

step() { printf '\n== %s\n' "$*"; }
# Waits (at most 10 s) until the command succeeds.
wait_until() {
    local what="$1"
    shift
    for _ in $(seq 200); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.05
    done
    echo "run.sh: timed out waiting for $what" >&2
    exit 1
}
screen() { tmux -S "$tmux_socket" capture-pane -p -t notes; }
screen_has() { screen | grep -qF -- "$1"; }
show_screen() {
    echo "   +------------------------------------------------------------------------------+"
    screen | sed -e 's/[[:space:]]*$//' -e 's/^/   | /'
    echo "   +------------------------------------------------------------------------------+"
}
mirror_says() { grep -qF -- "$1" "$demo/mirror.log"; }
show_mirror() {
    # The mirror's lines since the last call.
    local total
    total="$(wc -l < "$demo/mirror.log")"
    sed -n "$((${mirror_shown:-0} + 1)),${total}p" "$demo/mirror.log" | sed 's/^/   [mirror] /'
    mirror_shown="$total"
}
keys() { tmux -S "$tmux_socket" send-keys -t notes "$@"; }
typed() { tmux -S "$tmux_socket" send-keys -t notes -l -- "$1"; }

step "1. mirror, the sync agent, mirrors $this (this device) and $other (the laptop)"
mkfifo "$demo/mirror.in"
"$bin/mirror" "$this" "$other" < "$demo/mirror.in" > "$demo/mirror.log" 2>&1 &
exec 3> "$demo/mirror.in"
wait_until "mirror to start" mirror_says "mirror: watching"
show_mirror
echo "   laptop/notes.txt: $(tr '\n' '|' < "$other/notes.txt")"

step "2. notes, the editor, opens this-device/notes.txt in a terminal (tmux); filecoordd was started on demand"
tmux -S "$tmux_socket" new-session -d -s notes -x 80 -y 12 \
    -e "FILECOORDD_SOCKET=$FILECOORDD_SOCKET" -e "FILECOORDD_PATH=$FILECOORDD_PATH" \
    -e "FILECOORD_VERSIONS_DIR=$FILECOORD_VERSIONS_DIR" \
    "$bin/notes" --autosave 0.5 "$this/notes.txt"
wait_until "the editor to open the file" screen_has "opened notes.txt"
keys Down End
typed "- milk"
wait_until "the autosave" grep -qF "milk" "$this/notes.txt"
wait_until "the mirror to copy the save" grep -qF "milk" "$other/notes.txt"
echo "   typed '- milk'; half a second later the editor autosaved (a coordinated write), and the mirror copied it:"
show_screen
show_mirror
echo "   laptop/notes.txt: $(tr '\n' '|' < "$other/notes.txt")"

step "3. On the laptop, someone adds a line with a plain shell append (no coordination at all)"
# A moment first: the daemon does not report again, as a change made without coordination, what the file system
# shows of the mirror's coordinated write just before (its echo); an append within that moment would be taken for it.
sleep 0.5
printf '\n- bread' >> "$other/notes.txt"
wait_until "the mirror to bring it over" grep -qF "bread" "$this/notes.txt"
wait_until "the editor to reload" screen_has "bread"
wait_until "the editor to count the mirror's copy" screen_has "copies in:"
echo "   the daemon's watcher saw the append; the mirror copied it over with a coordinated write, under a file"
echo "   progress it published (the status line counts the copies in); the editor, told the file changed, read it"
echo "   again:"
show_screen
show_mirror

step "4. A conflict: both devices change the file while they are offline"
echo pause >&3
wait_until "the mirror to pause" mirror_says "mirror: paused"
keys Down End
typed " (2 loaves)"
wait_until "the autosave" grep -qF "loaves" "$this/notes.txt"
printf 'Shopping list\n- oat milk\n- bread\n' > "$other/notes.txt"
echo "   this device: '- bread (2 loaves)'; the laptop: '- milk' became '- oat milk'. Back online:"
echo resume >&3
wait_until "the mirror to record the conflict" mirror_says "mirror: conflict"
wait_until "the editor to show it" screen_has "conflicts: 1"
show_mirror
show_screen
echo "   no '(conflicted copy)' file appeared: $(cd "$this" && ls | tr '\n' ' ')"

step "5. The user presses ^K in the editor, sees both versions, and keeps the laptop's (1)"
keys C-k
wait_until "the conflict list" screen_has "1) from laptop"
show_screen
keys 1
wait_until "the resolution" grep -qF "oat milk" "$this/notes.txt"
wait_until "the mirror to copy the resolution" grep -qF "oat milk" "$other/notes.txt"
wait_until "the editor to show it" screen_has "oat milk"
show_screen
show_mirror

step "6. A file manager renames the file on this device (a coordinated move); the editor and the mirror follow"
printf 'move %s %s\nsleep 500\nexit\n' "$this/notes.txt" "$this/groceries.txt" | "$bin/fc-testhost" >/dev/null
wait_until "the editor to follow" screen_has "groceries.txt"
wait_until "the mirror to follow" test -f "$other/groceries.txt"
show_screen
show_mirror

step "7. fcdump: what filecoordd knows right now (the editor presents its file, the mirror both folders)"
"$bin/fcdump" | sed 's/^/   /'

step "8. The laptop deletes the file; the mirror deletes it here with .forDeleting; the editor closes"
rm "$other/groceries.txt"
wait_until "the editor to close" screen_has "the file was deleted"
show_screen
show_mirror
keys C-q
wait_until "the editor to quit" bash -c "! tmux -S '$tmux_socket' has-session -t notes"
echo exit >&3

echo
echo "The editor never wrote without a coordinated write, and the mirror never read without one: every change"
echo "above reached the other program through filecoordd. 'scripts/run.sh --presenters' shows the raw callbacks,"
echo "'scripts/run.sh --core' the arbiter's rules in one process."
