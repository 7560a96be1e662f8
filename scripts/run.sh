#!/usr/bin/env bash
# The README's run command: builds filecoordd and a small client, starts the daemon on a private socket, and shows
# two processes coordinating through it, with the presenter's callbacks printed as they happen.
#
#   scripts/run.sh          the two-process demonstration
#   scripts/run.sh --core   the narrated walk through the arbiter in one process (fcdemo)
#
# Installs what is missing first (scripts/install-deps.sh). Build output goes to stderr.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Sourced, so that a PATH fix for /opt/swift applies to the commands below.
. scripts/install-deps.sh

# Debug builds with scripts/test.sh's flags, so the two commands share .build/debug.
echo "==> Building filecoordd, fc-testhost and fcdemo" >&2
. scripts/build-flags.sh
swift build "${fc_build_flags[@]}" >&2
bin="$(swift build --show-bin-path)"

if [[ "${1:-}" == "--core" ]]; then
    exec "$bin/fcdemo"
fi

demo="$(mktemp -d /tmp/fc-demo-XXXXXX)"
export FILECOORDD_SOCKET="$demo/run/socket"
export FILECOORDD_PATH="$bin/filecoordd"
cleanup() {
    exec 3>&- 2>/dev/null || true
    [[ -f "$FILECOORDD_SOCKET.lock" ]] && kill "$(tr -dc '0-9' < "$FILECOORDD_SOCKET.lock")" 2>/dev/null || true
    rm -rf "$demo"
}
trap cleanup EXIT

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
echo
echo "Every callback above ran in the editor's process, asked for by the sync process through filecoordd."
echo "Run 'scripts/run.sh --core' for a narrated walk through the arbiter's rules in one process."
