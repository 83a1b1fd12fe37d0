# shellcheck shell=bash
# Shared helpers of the bench scripts; sourced, not run.
# Every wait here is bounded: a poll with a deadline, never an open loop.

log() { printf 'bench: %s\n' "$*" >&2; }
die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }

# wait_https URL CA SECONDS: poll URL (trusting CA) until it answers 2xx or
# SECONDS pass; returns non-zero on timeout.
wait_https() {
	local url=$1 ca=$2 seconds=$3 i
	for ((i = 0; i < seconds * 5; i++)); do
		if curl -fsS --max-time 2 --cacert "$ca" -o /dev/null "$url" 2>/dev/null; then
			return 0
		fi
		sleep 0.2
	done
	return 1
}

# port_free PORT: true when nothing listens on 127.0.0.1:PORT (TCP).
port_free() {
	! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# start_bg NAME DIR CMD...: run CMD in the background with its output in
# DIR/NAME.log and its pid in DIR/NAME.pid.
start_bg() {
	local name=$1 dir=$2
	shift 2
	"$@" >"$dir/$name.log" 2>&1 &
	echo $! >"$dir/$name.pid"
}

# running PID: true while PID runs. A zombie does not count: when the
# starting script has exited, the process's new parent may be slow to reap it.
running() {
	local state
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $state && $state != Z ]]
}

# alive DIR NAME: true while the process started as NAME still runs.
alive() {
	local pidfile="$1/$2.pid"
	[[ -f $pidfile ]] && running "$(cat "$pidfile")"
}

# ours DIR PID: true when PID runs with DIR in its command line, i.e. it is
# still the process a script here started and not a later one that got
# its pid. Every process these scripts start names its directory.
ours() {
	running "$2" && tr '\0' ' ' <"/proc/$2/cmdline" 2>/dev/null | grep -qF -- "$1"
}

# stop_all DIR: SIGTERM every process whose pid file is in DIR (only the
# ones these scripts started), wait up to 20 s for them, then SIGKILL.
stop_all() {
	local dir=$1 pidfile pid i
	shopt -s nullglob
	local all=("$dir"/*.pid) pidfiles=()
	shopt -u nullglob
	for pidfile in "${all[@]}"; do
		if ours "$dir" "$(cat "$pidfile")"; then
			pidfiles+=("$pidfile")
		else
			rm -f "$pidfile"
		fi
	done
	((${#pidfiles[@]})) || return 0
	for pidfile in "${pidfiles[@]}"; do
		kill -TERM "$(cat "$pidfile")" 2>/dev/null || true
	done
	for ((i = 0; i < 100; i++)); do
		local left=0
		for pidfile in "${pidfiles[@]}"; do
			running "$(cat "$pidfile")" && left=1
		done
		((left)) || break
		sleep 0.2
	done
	for pidfile in "${pidfiles[@]}"; do
		pid=$(cat "$pidfile")
		if running "$pid"; then
			log "pid $pid did not stop within 20 s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
		rm -f "$pidfile"
	done
}

# show_logs DIR: the last lines of every log in DIR, to say why a start failed.
show_logs() {
	local f
	for f in "$1"/*.log; do
		[[ -f $f ]] || continue
		printf -- '--- %s (last 15 lines)\n' "$f" >&2
		tail -n 15 "$f" >&2
	done
}
