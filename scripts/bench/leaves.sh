#!/usr/bin/env bash
# leaves.sh — memory and restart time of a node holding many small leaves
# (issue 7's targets: 1,000,000 leaves in at most 400 MB RSS per node, a
# restarted node ready within 10 s).
#
# Starts a three-node cluster (arbor-cluster.sh), PATCHes N leaves
# ("k0000000": "v0", …) into /leaves in batches through the first node,
# prints every node's RSS, then stops the last node — SIGTERM (it
# snapshots on the way out) or SIGKILL (it must replay its log) — restarts
# it on its data and times it to /readyz.
#
# Variables: LEAVES (1000000), BATCH (10000 leaves per PATCH), SIGNAL (TERM
# or KILL; default both, one after the other), BENCH_DIR (work directory,
# default a new one under /tmp), ARBOR (binary; default bin/arbor), and the
# port variables of arbor-cluster.sh. GOMEMLIMIT, when set, is passed to
# the nodes. Every wait is bounded; the processes it starts are stopped on
# exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/../.." && pwd)

leaves=${LEAVES:-1000000}
batch=${BATCH:-10000}
signals=${SIGNAL:-TERM KILL}
work=${BENCH_DIR:-$(mktemp -d /tmp/arbor-leaves.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
if [[ -z ${ARBOR:-} ]]; then
	make -s -C "$root" build >&2
	ARBOR=$root/bin/arbor
fi
export ARBOR
read -r -a http_ports <<<"${ARBOR_HTTP_PORTS:-28441 28442 28443}"

# rss DIR: every node's resident memory in MB.
rss() {
	local i pid out=""
	for i in 1 2 3; do
		pid=$(cat "$1/n$i.pid" 2>/dev/null) || continue
		running "$pid" || continue
		out+="n$i $(awk '/^VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$pid/status") MB  "
	done
	echo "$out"
}

# load DIR: PATCH the leaves through node 1, one batch of generated JSON
# at a time.
load() {
	local dir=$1 i start=$SECONDS
	local secret url="https://127.0.0.1:${http_ports[0]}/leaves.json?print=silent"
	secret=$(cat "$dir/admin-secret")
	for ((i = 0; i < leaves; i += batch)); do
		awk -v from="$i" -v to="$((i + batch < leaves ? i + batch : leaves))" 'BEGIN {
			printf "{"
			for (j = from; j < to; j++) printf "%s\"k%07d\":\"v%d\"", (j > from ? "," : ""), j, j
			printf "}"
		}' >"$dir/batch.json"
		curl -fsS --max-time 60 --cacert "$dir/tls/ca.pem" -H "Authorization: Bearer $secret" \
			-X PATCH --data-binary "@$dir/batch.json" -o /dev/null "$url" ||
			die "PATCH of leaves $i.. failed"
	done
	rm -f "$dir/batch.json"
	log "loaded $leaves leaves in $((SECONDS - start)) s"
}

# restart DIR SIG: stop node 3 with SIG, start it again with the same
# command line and time it to /readyz.
restart() {
	local dir=$1 sig=$2 pid t0 t1 k
	pid=$(cat "$dir/n3.pid")
	local -a cmd
	mapfile -d '' cmd <"/proc/$pid/cmdline"
	kill "-$sig" "$pid"
	for ((k = 0; k < 300; k++)); do
		running "$pid" || break
		sleep 0.1
	done
	! running "$pid" || die "n3 did not stop within 30 s of SIG$sig"
	ARBOR_ADMIN_SECRET=$(cat "$dir/admin-secret") start_bg n3 "$dir" "${cmd[@]}"
	t0=$(date +%s.%N)
	for ((k = 0; k < 1200; k++)); do
		if curl -fsS --max-time 2 --cacert "$dir/tls/ca.pem" -o /dev/null "https://127.0.0.1:${http_ports[2]}/readyz" 2>/dev/null; then
			t1=$(date +%s.%N)
			log "n3 stopped with SIG$sig, restarted: ready after $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}') s"
			return 0
		fi
		sleep 0.05
	done
	die "n3 was not ready within 60 s of its restart after SIG$sig"
}

trap '"$here/arbor-cluster.sh" stop "$work/cluster" 2>/dev/null || true' EXIT
for sig in $signals; do
	rm -rf "$work/cluster"
	"$here/arbor-cluster.sh" start "$work/cluster"
	load "$work/cluster"
	log "RSS after loading: $(rss "$work/cluster")"
	restart "$work/cluster" "$sig"
	log "RSS after the restart: $(rss "$work/cluster")"
	"$here/arbor-cluster.sh" stop "$work/cluster"
done
