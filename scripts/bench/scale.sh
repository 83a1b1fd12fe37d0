#!/usr/bin/env bash
# scale.sh — how Arbor's costs grow with the size of the database and with
# the number of idle subscribers (`make bench-scale`, issue 33).
#
# Starts a three-node cluster (arbor-cluster.sh) and grows /leaves with
# PATCHes of BATCH small leaves ("k0000000": "v0", …, as leaves.sh) through
# node 1, one size after the other, so that each size reuses the loads of
# the smaller ones. At each size in SIZES it measures:
#   - write and read latency, p50 and p99: `arbor bench --workload write`
#     and `--workload read-local`, one client on the leader, DURATION each;
#   - RSS of every node (after the two runs; max and mean over the nodes);
#   - snapshot time and size: n3 is stopped with SIGTERM, which snapshots
#     on the way out; the time is the node's own "snapshot taken on
#     shutdown took=…" (raft.Snapshot() from the request to the file
#     synced and the log compacted), the size that snapshot's state.bin;
#   - restart time: n3 started again on its data, timed to /readyz.
# At SUB_SIZE leaves it then opens each count in SUBSCRIBERS of idle SSE
# streams (scripts/bench/idlestreams: one HTTP/1.1 TLS connection each,
# spread over the three nodes, on paths nobody writes) and measures write
# and read latency and RSS with them open.
#
# Prints progress on stderr, a table on stdout, and keeps the raw figures in
# BENCH_DIR/scale.tsv (one row per measurement, "-" where not measured) and
# every `arbor bench --json` result in BENCH_DIR/bench.jsonl; the plotter
# (go run ./scripts/bench/plot) draws docs/scale/*.svg from the TSV.
#
# Variables: SIZES ("10000 100000 1000000 10000000"), SUBSCRIBERS ("0 1000
# 10000"; empty for none), SUB_SIZE (100000), BATCH (10000 leaves per
# PATCH), DURATION (5s per latency run), LOAD_TIMEOUT (1200 s for the
# load to one size; slower stops the run there), SHUTDOWN_TIMEOUT (the
# nodes' --shutdown-timeout, 10m, so that a large snapshot on SIGTERM is
# not cut short by the default 10s), BENCH_DIR (work directory, default a
# new one under /tmp), KEEP_DATA (1 keeps the nodes' data dirs, which reach
# gigabytes), ARBOR (binary; default: make build, then bin/arbor), and the
# port variables of arbor-cluster.sh (defaults here 28461-3, 28361-3,
# 28371-3: apart from make bench's). Before each size it checks that the
# memory it will need (projected from the RSS per leaf so far) is
# available, and stops the size sweep there if not.
#
# Every wait is bounded, all traffic stays on 127.0.0.1, and every process
# it starts is stopped on exit.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/../.." && pwd)

read -r -a sizes <<<"${SIZES-10000 100000 1000000 10000000}"
read -r -a subscribers <<<"${SUBSCRIBERS-0 1000 10000}"
sub_size=${SUB_SIZE:-100000}
batch=${BATCH:-10000}
duration=${DURATION:-5s}
load_timeout=${LOAD_TIMEOUT:-1200}
work=${BENCH_DIR:-$(mktemp -d /tmp/arbor-scale.XXXXXX)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
cluster=$work/cluster
tsv=$work/scale.tsv
jsonl=$work/bench.jsonl

export ARBOR_HTTP_PORTS=${ARBOR_HTTP_PORTS:-28461 28462 28463}
export ARBOR_RAFT_PORTS=${ARBOR_RAFT_PORTS:-28361 28362 28363}
export ARBOR_GOSSIP_PORTS=${ARBOR_GOSSIP_PORTS:-28371 28372 28373}
# Info logs carry the shutdown snapshot's duration; the shutdown timeout
# goes to the nodes through the environment (arbor reads ARBOR_<FLAG>).
export ARBOR_LOG_LEVEL=info
export ARBOR_SHUTDOWN_TIMEOUT=${SHUTDOWN_TIMEOUT:-10m}
read -r -a http_ports <<<"$ARBOR_HTTP_PORTS"

for n in "${sizes[@]}" "${subscribers[@]}" "$sub_size" "$batch" "$load_timeout"; do
	[[ $n =~ ^[0-9]+$ ]] || die "not a whole number: $n (SIZES, SUBSCRIBERS, SUB_SIZE, BATCH, LOAD_TIMEOUT)"
done
((batch > 0)) || die "BATCH must be positive"
for n in "${sizes[@]}"; do
	((n > 0)) || die "SIZES must be positive (the curves put them on a log scale)"
done
((${#sizes[@]} + ${#subscribers[@]} > 0)) || die "nothing to measure: SIZES and SUBSCRIBERS are both empty"

# targets: every size the load stops at, ascending: SIZES, and SUB_SIZE
# when there are subscribers to measure.
targets=("${sizes[@]}")
((${#subscribers[@]} == 0)) || targets+=("$sub_size")
mapfile -t targets < <(printf '%s\n' "${targets[@]}" | sort -n -u)
max_size=${targets[-1]}
# Keys are zero-padded to one width, 7 digits up to 10,000,000 leaves (as
# leaves.sh), so that every size stores keys of the same length.
width=$(((${#max_size} - 1) > 7 ? ${#max_size} - 1 : 7))

# note MESSAGE: logged now and kept for the end of the TSV and the table.
notes=()
note() {
	notes+=("$*")
	log "$*"
}

if [[ -z ${ARBOR:-} ]]; then
	make -s -C "$root" build >&2
	ARBOR=$root/bin/arbor
fi
export ARBOR
max_subs=0
for s in "${subscribers[@]}"; do
	if ((s > max_subs)); then max_subs=$s; fi
done
if ((max_subs > 0)); then
	(cd "$root" && go build -o "$work/idlestreams" ./scripts/bench/idlestreams) || die "cannot build scripts/bench/idlestreams"
	# The streams' client holds one descriptor per stream; the nodes, which
	# this shell starts, inherit the limit too (and raise it themselves).
	want=$((max_subs + 512))
	if (($(ulimit -n) < want)); then
		ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
	fi
	if (($(ulimit -n) < want)); then
		note "ulimit -n is $(ulimit -n) (hard $(ulimit -Hn)), below the $want that $max_subs streams need; larger counts will fail to open"
	fi
fi

cleanup() {
	stop_all "$work"
	"$here/arbor-cluster.sh" stop "$cluster" 2>/dev/null || true
	if [[ ${KEEP_DATA:-0} != 1 ]]; then
		rm -rf "$cluster"/n?.data
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# url I: the HTTPS base of node I (0, 1, 2).
url() { echo "https://127.0.0.1:${http_ports[$1]}"; }

# metric I NAME: the value of the unlabelled metric NAME on node I ("" when
# the node does not answer).
metric() {
	curl -fsS --max-time 5 --cacert "$cluster/tls/ca.pem" "$(url "$1")/metrics" 2>/dev/null |
		awk -v m="$2" '$1 == m {print $2; exit}' || true
}

# find_leader: sets leader to the index of the node that leads, after
# waiting up to 30 s for one. (The functions that may die or note set
# variables rather than print: in a subshell, neither would reach the
# script.)
find_leader() {
	local k i
	for ((k = 0; k < 150; k++)); do
		for i in 0 1 2; do
			if [[ $(metric "$i" arbor_raft_is_leader) == 1 ]]; then
				leader=$i
				return 0
			fi
		done
		sleep 0.2
	done
	die "no node reports being the leader after 30 s"
}

# metric_sum NAME: NAME's value summed over the three nodes (a missing
# one counts 0).
metric_sum() {
	local i v sum=0
	for i in 0 1 2; do
		v=$(metric "$i" "$1")
		sum=$((sum + ${v:-0}))
	done
	echo "$sum"
}

# snapshots_taken: snapshots written by the three processes so far.
snapshots_taken() { metric_sum arbor_raft_snapshots_total; }

# rss: "max mean n1/n2/n3" of the nodes' resident memory in MB.
rss() {
	local i pid kb out=()
	for i in 1 2 3; do
		pid=$(cat "$cluster/n$i.pid")
		kb=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null) || kb=0
		out+=("${kb:-0}")
	done
	awk -v a="${out[0]}" -v b="${out[1]}" -v c="${out[2]}" 'BEGIN {
		m = a; if (b > m) m = b; if (c > m) m = c
		printf "%.0f %.0f %.0f/%.0f/%.0f\n", m / 1024, (a + b + c) / 3072, a / 1024, b / 1024, c / 1024
	}'
}

# bench WORKLOAD: one client on the leader for DURATION; sets lat to
# (p50 p99 errors), in ms ("-" when the run failed), and keeps the JSON.
bench() {
	local out p50 p99 errs
	find_leader
	lat=(- - -)
	if ! out=$("$ARBOR" bench --addr "127.0.0.1:${http_ports[leader]}" --ca "$cluster/tls/ca.pem" --auth "$secret" \
		--workload "$1" --clients 1 --duration "$duration" --json 2>>"$work/bench.log"); then
		note "arbor bench --workload $1 failed at $loaded leaves (see $work/bench.log)"
		return 0
	fi
	echo "$out" >>"$jsonl"
	p50=$(sed -n 's/.*"latency_ms":{[^}]*"p50":\([0-9.e+-]*\).*/\1/p' <<<"$out")
	p99=$(sed -n 's/.*"latency_ms":{[^}]*"p99":\([0-9.e+-]*\).*/\1/p' <<<"$out")
	errs=$(sed -n 's/.*"errors":\([0-9]*\).*/\1/p' <<<"$out")
	lat=("${p50:--}" "${p99:--}" "${errs:--}")
}

# enough_memory TARGET: true when the RAM available covers the nodes'
# growth to TARGET leaves, projected from their RSS per leaf so far (plus a
# quarter, and 1 GB for the client and the restarted node's peak).
enough_memory() {
	local need avail max
	if ((loaded > 0)); then
		read -r max _ _ < <(rss)
		need=$(awk -v m="$max" -v l="$loaded" -v t="$1" 'BEGIN {printf "%.0f", 3 * m * (t / l - 1) * 1.25 + 1024}')
	else
		# Nothing measured yet: about 400 bytes per leaf and node (leaves.sh).
		need=$(awk -v t="$1" 'BEGIN {printf "%.0f", 3 * t * 400 / 1048576 + 1024}')
	fi
	avail=$(awk '/^MemAvailable/ {printf "%.0f", $2 / 1024}' /proc/meminfo)
	if ((need > avail)); then
		note "stopped before $1 leaves: the three nodes would need about $need MB more, $avail MB are available"
		return 1
	fi
	log "$1 leaves: about $need MB more needed, $avail MB available"
}

# load_to TARGET: PATCH leaves loaded..TARGET-1 into /leaves through node 1,
# BATCH at a time, within LOAD_TIMEOUT seconds.
load_to() {
	local target=$1 i to start=$SECONDS next_log=$((SECONDS + 30))
	local endpoint
	endpoint="$(url 0)/leaves.json?print=silent"
	for ((i = loaded; i < target; i += batch)); do
		to=$((i + batch < target ? i + batch : target))
		awk -v from="$i" -v to="$to" -v w="$width" 'BEGIN {
			printf "{"
			for (j = from; j < to; j++) printf "%s\"k%0*d\":\"v%d\"", (j > from ? "," : ""), w, j, j
			printf "}"
		}' >"$work/batch.json"
		curl -fsS --max-time 120 --cacert "$cluster/tls/ca.pem" -H "Authorization: Bearer $secret" \
			-X PATCH --data-binary "@$work/batch.json" -o /dev/null "$endpoint" ||
			die "PATCH of leaves $i.. failed"
		loaded=$to
		if ((SECONDS >= next_log)); then
			log "loading: $loaded of $target leaves after $((SECONDS - start)) s"
			next_log=$((SECONDS + 30))
		fi
		if ((SECONDS - start > load_timeout)); then
			note "stopped at $loaded leaves: loading towards $target took over LOAD_TIMEOUT=$load_timeout s"
			return 1
		fi
	done
	rm -f "$work/batch.json"
	log "loaded $loaded leaves ($((SECONDS - start)) s for this step)"
}

# seconds DURATION: a Go duration (850µs, 12.5ms, 1.2s, 1m3.5s) in seconds.
seconds() {
	awk -v d="$1" 'BEGIN {
		t = 0
		while (match(d, /^[0-9.]+(ns|us|µs|ms|s|m|h)/)) {
			part = substr(d, 1, RLENGTH); d = substr(d, RLENGTH + 1)
			n = part + 0; u = part; sub(/^[0-9.]+/, "", u)
			f = (u == "ns") ? 1e-9 : (u == "us" || u == "µs") ? 1e-6 : (u == "ms") ? 1e-3 : (u == "s") ? 1 : (u == "m") ? 60 : 3600
			t += n * f
		}
		printf "%.3f", t
	}'
}

# elapsed_since T0: seconds from T0 (date +%s.%N) to now, two decimals.
elapsed_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN {printf "%.2f", b - a}'; }

# restart_n3: stop n3 with SIGTERM (it snapshots on the way out), start it
# again on its data with the same command line and time it to /readyz.
# Sets snap to (snapshot_s snapshot_mb stop_s restart_s role).
restart_n3() {
	local pid role=follower t0 k stop_s took snap_dir snap_mb="-" snap_s="-"
	local stop_limit=$(($(seconds "$ARBOR_SHUTDOWN_TIMEOUT" | cut -d. -f1) + 30))
	[[ $(metric 2 arbor_raft_is_leader) == 1 ]] && role=leader
	pid=$(cat "$cluster/n3.pid")
	local -a cmd
	mapfile -d '' cmd <"/proc/$pid/cmdline"
	t0=$(date +%s.%N)
	kill -TERM "$pid"
	for ((k = 0; k < stop_limit * 10; k++)); do
		running "$pid" || break
		sleep 0.1
	done
	! running "$pid" || die "n3 did not stop within $stop_limit s of SIGTERM"
	stop_s=$(elapsed_since "$t0")
	took=$(sed -n 's/.*msg="snapshot taken on shutdown".* took=\([^ ]*\).*/\1/p' "$cluster/n3.log" | tail -n 1)
	snap_dir=$(sed -n 's/.*msg="creating new snapshot".* path=\([^ ]*\)\.tmp.*/\1/p' "$cluster/n3.log" | tail -n 1)
	if [[ -n $took && -f $snap_dir/state.bin ]]; then
		snap_s=$(seconds "$took")
		snap_mb=$(awk -v b="$(stat -c %s "$snap_dir/state.bin")" 'BEGIN {printf "%.1f", b / 1048576}')
	else
		note "n3 wrote no snapshot on shutdown at $loaded leaves (see $cluster/n3-$loaded.log)"
	fi
	cp "$cluster/n3.log" "$cluster/n3-$loaded.log"
	ARBOR_ADMIN_SECRET=$secret start_bg n3 "$cluster" "${cmd[@]}"
	t0=$(date +%s.%N)
	for ((k = 0; k < 6000; k++)); do
		if curl -fsS --max-time 2 --cacert "$cluster/tls/ca.pem" -o /dev/null "$(url 2)/readyz" 2>/dev/null; then
			snap=("$snap_s" "$snap_mb" "$stop_s" "$(elapsed_since "$t0")" "$role")
			return 0
		fi
		alive "$cluster" n3 || die "n3 exited during its restart (see $cluster/n3.log)"
		sleep 0.05
	done
	die "n3 was not ready within 300 s of its restart"
}

# row FIELDS...: one line of the TSV.
row() {
	local IFS=$'\t'
	echo "$*" >>"$tsv"
}

# measure_size LEAVES LOAD_S: the figures at one database size.
measure_size() {
	local n=$1 load_s=$2 w r snaps rss_f
	log "== $n leaves: write and read latency ($duration each), RSS, snapshot, restart"
	snaps=$(snapshots_taken)
	bench write
	w=("${lat[@]}")
	bench read-local
	r=("${lat[@]}")
	snaps=$(($(snapshots_taken) - snaps))
	read -r -a rss_f < <(rss)
	restart_n3
	row size "$n" 0 "${w[@]}" "${r[@]}" "${snap[0]}" "${snap[1]}" "${snap[2]}" "${snap[3]}" \
		"${rss_f[@]}" "$load_s" - "$snaps" "${snap[4]}"
	log "$n leaves: write p50/p99 ${w[0]}/${w[1]} ms, read ${r[0]}/${r[1]} ms, RSS max ${rss_f[0]} MB (${rss_f[2]}), snapshot ${snap[0]} s ${snap[1]} MB, stop ${snap[2]} s, restart ${snap[3]} s (n3 was a ${snap[4]})"
}

# streams_open: the idle streams the three nodes report serving.
streams_open() { metric_sum arbor_stream_open; }

# measure_subscribers N: with N idle streams open, write and read latency
# and RSS.
measure_subscribers() {
	local n=$1 w r rss_f open_s=- t0 k snaps
	log "== $loaded leaves, $n idle subscribers"
	if ((n > 0)); then
		t0=$(date +%s.%N)
		start_bg subs "$work" "$work/idlestreams" --addr "127.0.0.1:${http_ports[0]},127.0.0.1:${http_ports[1]},127.0.0.1:${http_ports[2]}" \
			--ca "$cluster/tls/ca.pem" --auth-file "$cluster/admin-secret" --n "$n" --prefix /scale-idle \
			--open-timeout 10m --max-time 2h
		for ((k = 0; k < 6600; k++)); do
			grep -q '^ready' "$work/subs.log" 2>/dev/null && break
			alive "$work" subs || break
			sleep 0.1
		done
		if ! grep -q '^ready' "$work/subs.log" 2>/dev/null; then
			note "$n idle streams did not open: $(grep 'idlestreams:' "$work/subs.log" | tail -n 1)"
			stop_all "$work"
			return 0
		fi
		open_s=$(elapsed_since "$t0")
		log "$n streams open in $open_s s; the nodes report $(streams_open)"
	fi
	snaps=$(snapshots_taken)
	bench write
	w=("${lat[@]}")
	bench read-local
	r=("${lat[@]}")
	snaps=$(($(snapshots_taken) - snaps))
	read -r -a rss_f < <(rss)
	if ((n > 0)); then
		local still
		still=$(streams_open)
		((still >= n)) || note "only $still of $n idle streams were still open after the measurements at $n subscribers"
		stop_all "$work"
		grep 'idlestreams:' "$work/subs.log" | tail -n 1 >&2 || true
	fi
	row subs "$loaded" "$n" "${w[@]}" "${r[@]}" - - - - "${rss_f[@]}" - "$open_s" "$snaps" -
	log "$n subscribers: write p50/p99 ${w[0]}/${w[1]} ms, read ${r[0]}/${r[1]} ms, RSS max ${rss_f[0]} MB (${rss_f[2]})"
}

# print_table TSV: the figures as two Markdown tables.
print_table() {
	awk -F '\t' '
		function pair(a, b) { return (a == "-" ? "—" : a " / " b) }
		function val(a) { return (a == "-" ? "—" : a) }
		/^#/ || $1 == "phase" { next }
		$1 == "size" { s[++ns] = sprintf("| %d | %s | %s | %s | %s | %s | %s | %s (%s) | %s |", $2, pair($4, $5), pair($7, $8), val($10), val($11), val($12), val($13), $14, $15, $17) }
		$1 == "subs" { b[++nb] = sprintf("| %d | %d | %s | %s | %s (%s) | %s |", $3, $2, pair($4, $5), pair($7, $8), $14, $15, val($18)) }
		END {
			if (ns) {
				print ""
				print "| leaves | write p50 / p99 ms | read p50 / p99 ms | snapshot s | snapshot MB | SIGTERM to exit s | restart to ready s | RSS max (mean) MB | load s |"
				print "|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
				for (i = 1; i <= ns; i++) print s[i]
			}
			if (nb) {
				print ""
				print "| subscribers | leaves | write p50 / p99 ms | read p50 / p99 ms | RSS max (mean) MB | streams opened in s |"
				print "|--:|--:|--:|--:|--:|--:|"
				for (i = 1; i <= nb; i++) print b[i]
			}
		}' "$1"
	grep '^# ' "$1" || true
}

loadavg() { cut -d ' ' -f 1 /proc/loadavg; }
load_start=$(loadavg)
started=$SECONDS
printf 'phase\tleaves\tsubscribers\twrite_p50_ms\twrite_p99_ms\twrite_errors\tread_p50_ms\tread_p99_ms\tread_errors\tsnapshot_s\tsnapshot_mb\tstop_s\trestart_s\trss_max_mb\trss_mean_mb\trss_nodes_mb\tload_s\topen_s\tauto_snapshots\tn3_role\n' >"$tsv"
: >"$jsonl"

rm -rf "$cluster"
"$here/arbor-cluster.sh" start "$cluster"
secret=$(cat "$cluster/admin-secret")
loaded=0

in_list() {
	local x=$1 y
	shift
	for y in "$@"; do [[ $x == "$y" ]] && return 0; done
	return 1
}

for target in "${targets[@]}"; do
	if ((target > loaded)); then
		enough_memory "$target" || break
		t0=$(date +%s.%N)
		load_to "$target" || break
		load_s=$(elapsed_since "$t0")
	else
		load_s=0
	fi
	if in_list "$target" "${sizes[@]}"; then
		measure_size "$target" "$load_s"
	fi
	if ((target == sub_size)); then
		for s in "${subscribers[@]}"; do
			measure_subscribers "$s"
		done
	fi
done
load_end=$(loadavg)
elapsed=$((SECONDS - started))

{
	printf '# %s, %s; %s; load average (1 min) %s at the start, %s at the end (%s CPUs); %d s in all\n' \
		"$(date -u '+%Y-%m-%d %H:%M UTC')" "$(git -C "$root" describe --always --dirty 2>/dev/null || echo 'unknown commit')" \
		"$("$ARBOR" version | head -n 1)" "$load_start" "$load_end" "$(nproc)" "$elapsed"
	for n in "${notes[@]}"; do printf '# note: %s\n' "$n"; done
} >>"$tsv"
print_table "$tsv"
log "raw figures: $tsv (bench results: $jsonl); $elapsed s in all"
