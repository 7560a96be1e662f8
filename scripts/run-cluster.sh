#!/usr/bin/env bash
# `scripts/run.sh --cluster`: two hosts sharing one folder through etcd, on this machine (issue 40). Called by
# scripts/run.sh after its build, with the products' folder as $1.
#
# Starts a three-member etcd cluster on 127.0.0.1 (ports the kernel picks), two filecoordd daemons as the hosts
# "studio" and "render" (each with its own socket, both sharing one folder), then: a write held on studio holds back
# a read on render until it ends; fcdump shows both hosts' view; studio's daemon is killed while it holds a write, and
# render's read is granted only once studio's session has expired in etcd; the notes editor on render reloads when
# studio writes its file (issue 41: presenters on other hosts are asked and told through etcd). Every wait is for an
# event, bounded.
set -euo pipefail

bin="$1"
demo="$(mktemp -d /tmp/fc-cluster-XXXXXX)"
pids=()
tmux_socket="$demo/tmux.sock"
cleanup() {
    tmux -S "$tmux_socket" kill-server 2>/dev/null || true
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    bash scripts/etcd-cluster.sh stop "$demo/etcd"
    wait 2>/dev/null || true
    rm -rf "$demo"
}
trap cleanup EXIT

# Waits up to 30 s for a command to succeed, polling.
await() {
    local what="$1"
    shift
    for _ in $(seq 1 600); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.05
    done
    echo "run-cluster: timed out waiting for $what" >&2
    exit 1
}

endpoints="$(bash scripts/etcd-cluster.sh start "$demo/etcd")"
echo "== etcd: three members on 127.0.0.1 ($endpoints)"

share="$demo/share"
mkdir -p "$share"
echo "first draft" > "$share/scene.txt"
start_host() {
    local name="$1"
    mkdir -p "$demo/$name"
    chmod 700 "$demo/$name"
    "$bin/filecoordd" --foreground --socket "$demo/$name/socket" --cluster-endpoints "$endpoints" \
        --host-name "$name" --cluster-ttl 3 --shared-folder "$share" --no-watching >"$demo/$name.log" 2>&1 &
    pids+=("$!")
    disown "$!"  # killed on purpose below: no job notice
    await "$name's session" grep -q "cluster: session open" "$demo/$name.log"
    echo "== filecoordd as host '$name' on $demo/$name/socket: session open, sharing $share"
}
start_host studio
start_host render
on() {
    local host="$1"
    shift
    FILECOORDD_SOCKET="$demo/$host/socket" FILECOORDD_PATH=/nonexistent "$@"
}

echo
echo "== studio holds a coordinated write of scene.txt; render asks to read it"
on studio "$bin/fccoord" write "$share/scene.txt" -- sh -c \
    'echo "  [studio] writing..."; echo "second draft" > "$FCCOORD_PATH_1"; touch "'"$demo"'/held";
     while [ ! -e "'"$demo"'/release" ]; do sleep 0.05; done; echo "  [studio] write done"' &
writer=$!
await "studio's write" test -e "$demo/held"
on render "$bin/fccoord" read "$share/scene.txt" -- sh -c 'echo "  [render] read: $(cat "$FCCOORD_PATH_1")"' &
reader=$!
await "studio to be asked for the folder" grep -q "another host asks for the shared folder" "$demo/studio.log"
echo "  (render waits: studio holds the folder's host lease and is draining it)"
echo
echo "== fcdump cluster on render, while it waits"
on render "$bin/fcdump" cluster | sed 's/^/  /'
touch "$demo/release"
wait "$writer" "$reader"
echo
echo "== fcdump cluster on render, after: render holds the folder now"
on render "$bin/fcdump" cluster | sed 's/^/  /'

echo
echo "== the notes editor opens scene.txt on render (in tmux); studio then writes the file"
echo "   (both daemons run with --no-watching: on one machine each would also see the other's write through inotify,"
echo "   which hosts sharing a network file system do not; what render's editor hears comes from studio, through etcd)"
if command -v tmux >/dev/null; then
    tmux -S "$tmux_socket" new-session -d -s notes -x 80 -y 8 \
        -e "FILECOORDD_SOCKET=$demo/render/socket" -e "FILECOORDD_PATH=/nonexistent" \
        "$bin/notes" --autosave 0.5 "$share/scene.txt"
    screen() { tmux -S "$tmux_socket" capture-pane -p -t notes; }
    screen_has() { screen | grep -qF -- "$1"; }
    await "the editor on render to open scene.txt" screen_has "opened scene.txt"
    await "studio to learn of render's editor" grep -q "another host presents items" "$demo/studio.log"
    on studio "$bin/fccoord" write "$share/scene.txt" -- sh -c 'echo "third draft, from studio" > "$FCCOORD_PATH_1"'
    await "the editor on render to reload" screen_has "third draft, from studio"
    echo "  [studio] wrote 'third draft, from studio'; the editor on render, asked first and told after, reloaded:"
    screen | sed '/^$/d; s/^/   | /'
    tmux -S "$tmux_socket" kill-server
else
    echo "  (tmux is not installed: skipped)"
fi

echo
echo "== studio writes again, and its daemon is killed (kill -9) while the write runs"
rm -f "$demo/held" "$demo/release"
on studio "$bin/fccoord" write "$share/scene.txt" -- sh -c 'touch "'"$demo"'/held"; sleep 30' &
pids+=("$!")
disown "$!"
await "studio's second write" test -e "$demo/held"
kill -9 "${pids[0]}"
killed_at=$(date +%s.%N)
on render "$bin/fccoord" read "$share/scene.txt" -- sh -c 'true'
waited=$(python3 -c "import time; print(f'{time.time() - $killed_at:.1f}')")
echo "  [render] read granted ${waited} s after the kill: once studio's session (time to live 3 s) expired in etcd,"
echo "           never before; studio's running write is what no lock service can stop (docs/SEMANTICS.md §14)"
echo
echo "Two daemons, one etcd cluster, one shared folder: claims exclude each other across hosts."
