#!/usr/bin/env bash
# arbor-cluster.sh start|stop DIR — a three-node Arbor cluster on 127.0.0.1
# for `make bench`, set up as in production: `arbor certs init` makes the
# CA, one certificate per node and the gossip key; Raft and forwarding use
# mutual TLS (--tls-ca), gossip is encrypted, clients speak HTTPS, and the
# default rules stand (the bench authenticates with an admin secret).
#
# ARBOR is the binary (default bin/arbor of this repository). Ports
# (override with the variables): HTTPS ARBOR_HTTP_PORTS (28441 28442
# 28443), Raft ARBOR_RAFT_PORTS (28301 28302 28303), gossip
# ARBOR_GOSSIP_PORTS (28311 28312 28313). On success DIR/addrs holds the
# HTTPS addresses as a comma list, DIR/tls/ca.pem the CA and
# DIR/admin-secret the credential. `stop DIR` ends only the processes
# `start DIR` began (SIGTERM: they hand over leadership and snapshot).
# ARBOR_LOG_LEVEL sets the nodes' --log-level (default warn; info logs,
# among others, each snapshot taken on shutdown and how long it took).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

root=$(cd "$here/../.." && pwd)
arbor=${ARBOR:-$root/bin/arbor}
read -r -a http_ports <<<"${ARBOR_HTTP_PORTS:-28441 28442 28443}"
read -r -a raft_ports <<<"${ARBOR_RAFT_PORTS:-28301 28302 28303}"
read -r -a gossip_ports <<<"${ARBOR_GOSSIP_PORTS:-28311 28312 28313}"
start_timeout=${ARBOR_START_TIMEOUT:-60}

start() {
	local dir=$1 i
	[[ -x $arbor ]] || die "no arbor binary at $arbor (run make build, or set ARBOR)"
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local tls=$dir/tls
	if [[ ! -f $tls/ca.pem ]]; then
		# One certificate per node, as in production; each is also valid
		# for 127.0.0.1, where these nodes listen.
		"$arbor" certs init --dir "$tls" --hosts n1,n2,n3 >"$dir/certs.log" 2>&1 || {
			cat "$dir/certs.log" >&2
			die "arbor certs init failed: this binary cannot make cluster certificates yet (the three-node cluster arrives with issue 4)"
		}
	fi
	for f in n1.pem n1-key.pem n2.pem n2-key.pem n3.pem n3-key.pem gossip.key; do
		[[ -f $tls/$f ]] || die "arbor certs init did not write $tls/$f"
	done
	[[ -f $dir/admin-secret ]] || (umask 077 && openssl rand -hex 24 >"$dir/admin-secret")
	for i in 0 1 2; do
		for p in "${http_ports[i]}" "${raft_ports[i]}" "${gossip_ports[i]}"; do
			port_free "$p" || die "port $p on 127.0.0.1 is in use (set ARBOR_HTTP_PORTS / ARBOR_RAFT_PORTS / ARBOR_GOSSIP_PORTS)"
		done
	done
	local join="" addrs=""
	for i in 0 1 2; do
		join+="${join:+,}127.0.0.1:${gossip_ports[i]}"
		addrs+="${addrs:+,}127.0.0.1:${http_ports[i]}"
	done
	for i in 0 1 2; do
		local name=n$((i + 1))
		# The secret goes through the environment, not the command line.
		ARBOR_ADMIN_SECRET=$(cat "$dir/admin-secret") start_bg "$name" "$dir" "$arbor" serve \
			--node-id "$name" --data-dir "$dir/$name.data" \
			--http-addr "127.0.0.1:${http_ports[i]}" \
			--raft-addr "127.0.0.1:${raft_ports[i]}" \
			--gossip-addr "127.0.0.1:${gossip_ports[i]}" \
			--join "$join" --bootstrap-expect 3 \
			--tls-cert "$tls/$name.pem" --tls-key "$tls/$name-key.pem" --tls-ca "$tls/ca.pem" \
			--gossip-key "$tls/gossip.key" --log-level "${ARBOR_LOG_LEVEL:-warn}"
	done
	for i in 0 1 2; do
		local ok=0 t
		# Poll /readyz; a node that exits (e.g. a binary without cluster
		# support refusing --bootstrap-expect 3) fails the start at once.
		for ((t = 0; t < start_timeout * 5; t++)); do
			if ! alive "$dir" "n$((i + 1))"; then
				break
			fi
			if curl -fsS --max-time 2 --cacert "$tls/ca.pem" -o /dev/null "https://127.0.0.1:${http_ports[i]}/readyz" 2>/dev/null; then
				ok=1
				break
			fi
			sleep 0.2
		done
		if ((!ok)); then
			show_logs "$dir"
			stop_all "$dir"
			die "arbor node n$((i + 1)) was not ready within ${start_timeout}s or exited (logs above); the three-node cluster needs issue 4"
		fi
	done
	echo "$addrs" >"$dir/addrs"
	log "$("$arbor" version | head -n 1): three nodes at $addrs (CA $tls/ca.pem)"
}

case "${1:-}" in
start) start "${2:?usage: arbor-cluster.sh start DIR}" ;;
stop) stop_all "${2:?usage: arbor-cluster.sh stop DIR}" ;;
*) die "usage: arbor-cluster.sh start|stop DIR" ;;
esac
