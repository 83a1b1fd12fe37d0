#!/usr/bin/env bash
# make test-k8s (docs/KUBERNETES.md): Arbor's deploy/k8s on a real,
# single-node Kubernetes control plane run as host processes on this
# machine. It builds (or takes from its cache) the control plane
# (scripts/k8s/build.sh), builds two images FROM scratch — the last
# release (RELEASES or the newest v* tag, as make test-upgrade; until there
# is one, the commit before HEAD) and HEAD — starts the cluster (scripts/k8s/cluster.sh),
# runs the scenarios of cmd/arbor-k8s from the cluster's client network
# namespace, and tears everything down by PID, also after a failure or ^C.
#
# Needs Linux, root and Docker; elsewhere it prints a SKIP line and exits 0.
# K8S_FLAGS passes more arbor-k8s flags, e.g. K8S_FLAGS='-scenarios upgrade'.
set -euo pipefail
cd "$(dirname "$0")/../.."
root="$(pwd)"

skip() {
	echo "SKIP: make test-k8s: $*"
	exit 0
}
[ "$(uname -s)" = Linux ] || skip "needs Linux (it runs a kubelet, containerd and iptables rules here)"
[ "$(id -u)" -eq 0 ] || skip "needs root (it runs a kubelet, containerd and iptables rules here)"
docker info >/dev/null 2>&1 || skip "Docker does not answer (the images are built with docker build)"

# Debian packages the cluster runs on.
missing=()
command -v etcd >/dev/null || missing+=(etcd-server)
[ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
command -v conntrack >/dev/null || missing+=(conntrack)
command -v containerd >/dev/null || missing+=(containerd)
command -v runc >/dev/null || missing+=(runc)
command -v iptables >/dev/null || missing+=(iptables)
command -v openssl >/dev/null || missing+=(openssl)
if [ ${#missing[@]} -gt 0 ]; then
	echo "test-k8s: installing ${missing[*]}"
	apt-get update -q
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# One cluster per machine: a second run (another clone) waits for the first.
mkdir -p /var/lib/arbor-k8s
exec 9>/var/lib/arbor-k8s/lock
if ! flock -n 9; then
	echo "test-k8s: another run holds /var/lib/arbor-k8s/lock; waiting (at most 30 minutes)"
	flock -w 1800 9 || { echo "test-k8s: the other run did not finish"; exit 1; }
fi

t0=$SECONDS
bin="$(scripts/k8s/build.sh | tail -n 1)"
echo "test-k8s: control plane in $bin ($((SECONDS - t0)) s)"

work="$root/bin/k8s"
export K8S_RUN="${K8S_RUN:-/var/lib/arbor-k8s/run}"
# A run interrupted before its teardown left its cluster: remove it first.
# Teardown must also get through a leftover with nothing in it (a run cut
# off before its first mount once failed CI here): try one first.
# Its PID file names a process that is not the cluster's (a PID reused
# after a reboot): teardown must leave it alone.
leftover="$(mktemp -d)"
mkdir -p "$leftover/pids" "$leftover/logs"
sleep 60 &
bystander=$!
echo "$bystander" >"$leftover/pids/kubelet"
K8S_RUN="$leftover" scripts/k8s/cluster.sh down "$bin" 2>/dev/null
[ ! -e "$leftover" ] || { echo "test-k8s: teardown left $leftover behind"; exit 1; }
kill -0 "$bystander" 2>/dev/null || { echo "test-k8s: teardown killed a process not its own"; exit 1; }
kill "$bystander"
wait "$bystander" 2>/dev/null || true
scripts/k8s/cluster.sh down "$bin"
rm -rf "$work"
mkdir -p "$work"

# The two releases.
new_tag="$(make -s image-tag)"
make -s image
# The last release (RELEASES, else the newest v* tag: scripts/last-release.sh),
# as make test-upgrade; before any, the commit before HEAD.
if last="$(scripts/last-release.sh)" && [ -n "$last" ] && git cat-file -e "${last#* }^{commit}" 2>/dev/null; then
	prev="${last#* }"
	prev_version="${last%% *}"
	prev_version="${prev_version#v}"
elif prev="$(git rev-parse --short=12 HEAD^ 2>/dev/null)"; then
	prev_version="0.0.0-dev+$prev"
else
	echo "test-k8s: no commit before HEAD (a shallow clone?): the upgrade is HEAD to HEAD"
	prev="$(git rev-parse --short=12 HEAD)"
	prev_version="0.0.0-dev+$prev"
fi
old_tag="${prev_version//+/_}"
if [ "$old_tag" = "$new_tag" ]; then
	old_tag="$old_tag-prev"
	prev_version="$prev_version-prev"
fi
mkdir -p "$work/prev"
git archive "$prev" | tar -x -C "$work/prev"
make -s -C "$work/prev" image VERSION="$prev_version" COMMIT="$(git rev-parse --short=12 "$prev")"
echo "test-k8s: images arbor:$old_tag (previous: $prev) and arbor:$new_tag (HEAD)"

# The pod sandbox image: a static program FROM scratch (no registry).
mkdir -p "$work/pause"
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/pause/pause" ./scripts/k8s/pause
printf 'FROM scratch\nCOPY pause /pause\nENTRYPOINT ["/pause"]\n' >"$work/pause/Dockerfile"
docker build -q -t arbor-k8s-pause:1 "$work/pause" >/dev/null

# Certificates for five pods (the scale scenario) and the client Service.
svc=arbor-headless.arbor.svc.cluster.local
bin/image/arbor certs init --dir "$work/certs" \
	--hosts "arbor-0.$svc,arbor-1.$svc,arbor-2.$svc,arbor-3.$svc,arbor-4.$svc" \
	--dns arbor.arbor.svc --dns arbor.arbor.svc.cluster.local >/dev/null
go build -o "$work/arbor-k8s" ./cmd/arbor-k8s

teardown() {
	rc=$?
	if [ -d "$K8S_RUN/logs" ]; then cp -r "$K8S_RUN/logs" "$work/cluster-logs" 2>/dev/null || true; fi
	scripts/k8s/cluster.sh down "$bin" || rc=1
	if [ $rc -ne 0 ]; then echo "test-k8s: FAILED; the cluster's logs and the diagnostics are in $work"; fi
	exit $rc
}
trap teardown EXIT
trap 'exit 130' INT TERM

t1=$SECONDS
scripts/k8s/cluster.sh up "$bin"
echo "test-k8s: cluster up in $((SECONDS - t1)) s"
docker save "arbor:$old_tag" "arbor:$new_tag" arbor-k8s-pause:1 | scripts/k8s/cluster.sh import -

# The scenarios run in the client's network namespace: they reach the pods
# and the client Service as a pod would, and nothing else.
# shellcheck disable=SC2086
ip netns exec arbk-client "$work/arbor-k8s" -kubectl "$bin/kubectl" -kubeconfig "$K8S_RUN/kubeconfig" \
	-old-manifests "$work/prev/deploy/k8s" -new-manifests deploy/k8s \
	-old-tag "$old_tag" -new-tag "$new_tag" -certs "$work/certs" -work "$work" \
	-report "$work/report.md" ${K8S_FLAGS:-}
echo "test-k8s: report in $work/report.md ($((SECONDS - t0)) s in all)"
