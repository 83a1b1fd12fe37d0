#!/usr/bin/env bash
# etcd-cluster.sh start|stop DIR — a three-member etcd cluster on 127.0.0.1
# for `make bench`, the comparison Arbor is measured against.
#
# Both sides pay for encryption: the client URLs are HTTPS (as Arbor's
# REST API is), and the peers talk mutual TLS (as Arbor's Raft does with
# --tls-ca). The certificates come from openssl, into DIR/tls. Debian's
# etcd-server (and etcd-client) are installed with apt-get when etcd is
# missing. Data, logs and pids stay in DIR; `stop DIR` ends only the
# processes `start DIR` began.
#
# Ports (override with the variables): clients ETCD_CLIENT_PORTS
# (23791 23792 23793), peers ETCD_PEER_PORTS (23801 23802 23803). They are
# not etcd's defaults, so a system etcd on 2379 is left alone.
# On success DIR/addrs holds the client addresses as a comma list and
# DIR/tls/ca.pem the CA to trust.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

read -r -a client_ports <<<"${ETCD_CLIENT_PORTS:-23791 23792 23793}"
read -r -a peer_ports <<<"${ETCD_PEER_PORTS:-23801 23802 23803}"
start_timeout=${ETCD_START_TIMEOUT:-60}

ensure_etcd() {
	command -v etcd >/dev/null && return 0
	log "etcd is not installed; installing Debian's etcd-server and etcd-client"
	local sudo=()
	((EUID == 0)) || sudo=(sudo)
	"${sudo[@]}" apt-get update -qq >&2 || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq etcd-server etcd-client >&2 ||
		die "could not install etcd-server; install it by hand (apt-get install etcd-server)"
	command -v etcd >/dev/null || die "etcd-server is installed but etcd is not on PATH"
}

# make_certs DIR: a CA and one certificate for 127.0.0.1/localhost that
# serves both the client URLs and (with clientAuth) the peer links.
make_certs() {
	local tls=$1/tls
	[[ -f $tls/server.pem ]] && return 0
	mkdir -p "$tls"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
		-subj "/O=Arbor bench/CN=etcd bench CA" -keyout "$tls/ca-key.pem" -out "$tls/ca.pem" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
		-subj "/O=Arbor bench/CN=etcd" -keyout "$tls/server-key.pem" -out "$tls/server.csr" 2>/dev/null
	printf '%s\n' \
		"subjectAltName=IP:127.0.0.1,DNS:localhost" \
		"extendedKeyUsage=serverAuth,clientAuth" \
		"keyUsage=digitalSignature,keyEncipherment" >"$tls/ext.cnf"
	openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca-key.pem" -CAcreateserial \
		-days 30 -extfile "$tls/ext.cnf" -out "$tls/server.pem" 2>/dev/null
	chmod 600 "$tls"/*-key.pem
}

start() {
	local dir=$1 i
	ensure_etcd
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	make_certs "$dir"
	for i in 0 1 2; do
		for p in "${client_ports[i]}" "${peer_ports[i]}"; do
			port_free "$p" || die "port $p on 127.0.0.1 is in use (set ETCD_CLIENT_PORTS / ETCD_PEER_PORTS)"
		done
	done
	local cluster="" addrs=""
	for i in 0 1 2; do
		cluster+="${cluster:+,}e$((i + 1))=https://127.0.0.1:${peer_ports[i]}"
		addrs+="${addrs:+,}127.0.0.1:${client_ports[i]}"
	done
	local tls=$dir/tls
	for i in 0 1 2; do
		local name=e$((i + 1))
		start_bg "$name" "$dir" etcd \
			--name "$name" --data-dir "$dir/$name.data" \
			--listen-client-urls "https://127.0.0.1:${client_ports[i]}" \
			--advertise-client-urls "https://127.0.0.1:${client_ports[i]}" \
			--listen-peer-urls "https://127.0.0.1:${peer_ports[i]}" \
			--initial-advertise-peer-urls "https://127.0.0.1:${peer_ports[i]}" \
			--initial-cluster "$cluster" --initial-cluster-state new \
			--initial-cluster-token arbor-bench \
			--cert-file "$tls/server.pem" --key-file "$tls/server-key.pem" \
			--peer-cert-file "$tls/server.pem" --peer-key-file "$tls/server-key.pem" \
			--peer-trusted-ca-file "$tls/ca.pem" --peer-client-cert-auth \
			--logger zap --log-level warn
	done
	for i in 0 1 2; do
		if ! wait_https "https://127.0.0.1:${client_ports[i]}/health" "$tls/ca.pem" "$start_timeout"; then
			show_logs "$dir"
			stop_all "$dir"
			die "etcd member e$((i + 1)) was not healthy within ${start_timeout}s (logs above)"
		fi
	done
	echo "$addrs" >"$dir/addrs"
	log "etcd $(etcd --version | sed -n 's/^etcd Version: //p'): three members at $addrs (CA $tls/ca.pem)"
}

case "${1:-}" in
start) start "${2:?usage: etcd-cluster.sh start DIR}" ;;
stop) stop_all "${2:?usage: etcd-cluster.sh stop DIR}" ;;
*) die "usage: etcd-cluster.sh start|stop DIR" ;;
esac
