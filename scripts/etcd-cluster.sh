#!/usr/bin/env bash
# A three-member etcd cluster on 127.0.0.1 for scripts/run.sh --cluster and CI's cluster soak (issue 40). The
# Swift tests start their own (Tests/EndToEndTests/EtcdCluster.swift).
#
#   scripts/etcd-cluster.sh start DIR   starts the members (data and logs under DIR, ports the kernel picks), waits
#                                       until each answers /health, and prints the client URLs, comma-separated
#   scripts/etcd-cluster.sh stop DIR    kills the members started in DIR
#
# Needs etcd (Debian's etcd-server; scripts/install-deps.sh installs it), curl and python3.
set -euo pipefail

command="${1:?usage: etcd-cluster.sh start|stop DIR}"
dir="${2:?usage: etcd-cluster.sh start|stop DIR}"

if [[ "$command" == stop ]]; then
    for pidfile in "$dir"/m*.pid; do
        [[ -f "$pidfile" ]] && kill -9 "$(cat "$pidfile")" 2>/dev/null || true
    done
    exit 0
fi
[[ "$command" == start ]] || { echo "usage: etcd-cluster.sh start|stop DIR" >&2; exit 64; }
command -v etcd >/dev/null || { echo "etcd-cluster: etcd is not installed (apt-get install etcd-server)" >&2; exit 1; }
mkdir -p "$dir"

read -r -a ports < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(6)]
for s in socks: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
for s in socks: s.close()')
initial=""
for i in 0 1 2; do initial+="m$i=http://127.0.0.1:${ports[$((i + 3))]},"; done
initial="${initial%,}"
token="fc-$$-$RANDOM"
endpoints=""
for i in 0 1 2; do
    client="http://127.0.0.1:${ports[$i]}"
    peer="http://127.0.0.1:${ports[$((i + 3))]}"
    # etcd reads ETCD_* variables as flags: none of the caller's.
    env $(env | sed -n 's/^\(ETCD_[A-Z_]*\)=.*/-u \1/p') etcd --name "m$i" --data-dir "$dir/m$i" \
        --listen-client-urls "$client" --advertise-client-urls "$client" --listen-peer-urls "$peer" \
        --initial-advertise-peer-urls "$peer" --initial-cluster "$initial" --initial-cluster-token "$token" \
        --initial-cluster-state new >"$dir/m$i.log" 2>&1 &
    echo "$!" > "$dir/m$i.pid"
    endpoints+="$client,"
done
for i in 0 1 2; do
    for attempt in $(seq 1 600); do
        if curl -s -m 1 "http://127.0.0.1:${ports[$i]}/health" | grep -q '"health":"true"'; then break; fi
        if ((attempt == 600)); then
            echo "etcd-cluster: member m$i did not become healthy in 30 s; its log:" >&2
            tail -20 "$dir/m$i.log" >&2
            exit 1
        fi
        sleep 0.05
    done
done
echo "${endpoints%,}"
