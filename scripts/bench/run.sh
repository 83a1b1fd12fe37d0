#!/usr/bin/env bash
# run.sh — the cluster half of `make bench`: Arbor (three nodes) against
# etcd (three members) on this machine, one at a time, with the same load
# generator (`arbor bench`) and the same workloads at 1, 16, 64 and 256
# clients, plus the ceiling (a bare HTTPS handler in the client process).
# Prints a table with the ratio Arbor/etcd per row and appends it, with
# the method and the machine, to docs/PERFORMANCE.md.
#
# Variables: TARGETS ("arbor etcd bare"), WORKLOADS (all six), CLIENTS
# ("1 16 64 256"), DURATION (10s per run), REPEAT (1; with more, each row
# keeps its best run, which filters out other processes taking the CPU of
# a shared machine), VALUE_SIZE (100), KEYS (1000),
# BENCH_DIR (work directory, default a new one under /tmp), BENCH_DOC
# (docs/PERFORMANCE.md; "-" to append nowhere), ARBOR (binary; default:
# make build, then bin/arbor).
#
# Every run is bounded (DURATION plus one request timeout), every process
# this script starts is stopped on exit, and all traffic stays on 127.0.0.1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/../.." && pwd)

targets=${TARGETS:-arbor etcd bare}
workloads=${WORKLOADS:-write read-local read-linearizable mixed push patch-multi}
clients=${CLIENTS:-1 16 64 256}
duration=${DURATION:-10s}
repeat=${REPEAT:-1}
value_size=${VALUE_SIZE:-100}
keys=${KEYS:-1000}
work=${BENCH_DIR:-$(mktemp -d /tmp/arbor-bench.XXXXXX)}
doc=${BENCH_DOC:-$root/docs/PERFORMANCE.md}
mkdir -p "$work"
work=$(cd "$work" && pwd)
results=$work/results.jsonl
: >"$results"

if [[ -z ${ARBOR:-} ]]; then
	make -s -C "$root" build >&2
	ARBOR=$root/bin/arbor
fi
export ARBOR

cleanup() {
	"$here/arbor-cluster.sh" stop "$work/arbor" 2>/dev/null || true
	"$here/etcd-cluster.sh" stop "$work/etcd" 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

notes=()

# run_target TARGET ARGS...: every workload at every client count against
# one target; a failed run is noted and the next one goes on.
run_target() {
	local target=$1 w c r
	shift
	for w in $workloads; do
		for c in $clients; do
			for ((r = 0; r < repeat; r++)); do
				if ! "$ARBOR" bench --target "$target" "$@" --workload "$w" --clients "$c" \
					--duration "$duration" --value-size "$value_size" --keys "$keys" --json >>"$results"; then
					notes+=("$target $w at $c clients failed (see the output above)")
				fi
			done
		done
	done
}

# start_cluster NAME: NAME-cluster.sh start, its messages kept in
# WORK/NAME-start.log (for why) and shown once it is done.
start_cluster() {
	local rc=0
	"$here/$1-cluster.sh" start "$work/$1" 2>"$work/$1-start.log" || rc=$?
	cat "$work/$1-start.log" >&2
	return "$rc"
}

# why NAME: the error that stopped NAME's cluster from starting.
why() {
	grep 'error:' "$work/$1-start.log" | tail -n 1 | sed 's/^bench: error: //'
}

# loadavg: the 1-minute load average; above the number of CPUs, something
# else was competing with the benchmark.
loadavg() { cut -d ' ' -f 1 /proc/loadavg; }
load_start=$(loadavg)

for target in $targets; do
	case $target in
	arbor)
		if start_cluster arbor; then
			run_target arbor --addr "$(cat "$work/arbor/addrs")" --ca "$work/arbor/tls/ca.pem" \
				--auth "$(cat "$work/arbor/admin-secret")"
		else
			notes+=("ARBOR NOT MEASURED, its columns are empty: the three-node cluster did not start: $(why arbor)")
			log "${notes[-1]}"
		fi
		"$here/arbor-cluster.sh" stop "$work/arbor"
		;;
	etcd)
		if start_cluster etcd; then
			run_target etcd --addr "$(cat "$work/etcd/addrs")" --ca "$work/etcd/tls/ca.pem"
		else
			notes+=("ETCD NOT MEASURED, its columns are empty: the etcd cluster did not start: $(why etcd)")
			log "${notes[-1]}"
		fi
		"$here/etcd-cluster.sh" stop "$work/etcd"
		;;
	bare)
		run_target bare
		;;
	*) die "unknown target $target (arbor, etcd or bare)" ;;
	esac
done

load_end=$(loadavg)
[[ -s $results ]] || die "no run succeeded; nothing to report"
table=$("$ARBOR" bench --report "$results")

machine() {
	local cpu mem
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
	echo "$(nproc) × ${cpu:-unknown CPU}, $mem RAM, Linux $(uname -r), $(go version 2>/dev/null | awk '{print $3}' || echo 'go ?')"
}

report() {
	echo
	echo "### $(date -u '+%Y-%m-%d %H:%M UTC'), $(git -C "$root" describe --always --dirty 2>/dev/null || echo 'unknown commit')"
	echo
	echo "- Machine: $(machine); the three nodes and the client share it."
	echo "- etcd: $(etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p' || echo 'not installed'); $("$ARBOR" version | head -n 1)."
	echo "- Method: \`scripts/bench/run.sh\` — targets: $targets; each run ${duration} of back-to-back requests from N clients"
	echo "  (one keep-alive HTTPS/1.1 connection each, spread round-robin over the nodes), ${value_size}-byte values,"
	echo "  ${keys} keys (written first for the read workloads), patch-multi = 10 keys per request; best of ${repeat} run(s) per row."
	echo "- Load average (1 min) at the start and the end: $load_start, $load_end ($(nproc) CPUs)."
	for n in "${notes[@]}"; do
		echo "- $n"
	done
	echo
	echo "$table"
}

echo
echo "$table"
for n in "${notes[@]}"; do
	log "$n"
done
cp "$results" "$work/results-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
if [[ $doc != - ]]; then
	report >>"$doc"
	log "appended the results to $doc (raw results: $results)"
fi
