#!/usr/bin/env bash
# A single-node Kubernetes cluster run as host processes, for `make test-k8s`
# (docs/KUBERNETES.md): etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, containerd (its own instance, not Docker's), kubelet,
# kube-proxy and CoreDNS.
#
#   scripts/k8s/cluster.sh up BIN_DIR     # BIN_DIR from scripts/k8s/build.sh
#   scripts/k8s/cluster.sh down           # everything up started, by PID
#
# Nothing of it reaches past this machine:
#   - the node's address 10.250.0.1 sits on a bridge without ports
#     (arbk-node0; the kernel here has no dummy links);
#   - pods live on the bridge arbk-cni0, 10.244.0.0/24, with no default
#     route and no masquerade: their routes go to the pod range, the
#     Service range 10.96.0.0/24 and the node range 10.250.0.0/16 only;
#   - the host has blackhole routes for the Service range and the node
#     range (a backstop: what kube-proxy does not translate goes nowhere),
#     and its FORWARD chain drops anything from these interfaces that would
#     leave by another one (chain ARBK-GUARD);
#   - the test client runs in the network namespace arbk-client
#     (10.250.1.2, a veth to the host's 10.250.1.1), whose routes too go to
#     these ranges only: it reaches pods and the client Service the way a
#     pod would, through kube-proxy's rules;
#   - CoreDNS answers the cluster's names only (no forward plugin), on the
#     node's address, which is the pods' nameserver.
#
# State lives in $K8S_RUN (default /var/lib/arbor-k8s/run), outside the
# clone; `down` removes it after stopping every process by the PID it
# recorded, unmounting what the kubelet and containerd mounted, deleting
# the pods' network namespaces, the links, routes and iptables chains.
set -euo pipefail

K8S_RUN="${K8S_RUN:-/var/lib/arbor-k8s/run}"
NODE_IP=10.250.0.1
NODE_NAME=arbor-k8s-node
POD_CIDR=10.244.0.0/24
POD_GW=10.244.0.1
SVC_CIDR=10.96.0.0/24
SVC_API=10.96.0.1
NODE_RANGE=10.250.0.0/16
CLIENT_HOST_IP=10.250.1.1
CLIENT_IP=10.250.1.2
CLIENT_NS=arbk-client
PAUSE_IMAGE=docker.io/library/arbor-k8s-pause:1
PV_COUNT="${PV_COUNT:-12}"
KUBELET_SYSCTLS="vm.overcommit_memory kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes"

log() { echo "k8s: $*" >&2; }

# start NAME CMD...: runs CMD in the background, output to logs/NAME.log,
# its PID in pids/NAME.
start() {
	local name="$1"
	shift
	"$@" >"$K8S_RUN/logs/$name.log" 2>&1 &
	echo $! >"$K8S_RUN/pids/$name"
}

# wait_for WHAT SECONDS CMD...: polls CMD every 0.5 s until it succeeds.
wait_for() {
	local what="$1" secs="$2"
	shift 2
	local deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if [ $SECONDS -ge $deadline ]; then
			log "$what: not there after ${secs} s"
			return 1
		fi
		sleep 0.5
	done
}

alive() { [ -f "$K8S_RUN/pids/$1" ] && kill -0 "$(cat "$K8S_RUN/pids/$1")" 2>/dev/null; }

pki() {
	local d="$K8S_RUN/pki"
	mkdir -p "$d"
	cd "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj "/CN=arbor-k8s-ca" 2>/dev/null
	# name CN O SANs
	cert() {
		local name="$1" cn="$2" o="$3" san="$4"
		openssl req -newkey rsa:2048 -nodes -keyout "$name.key" -out "$name.csr" -subj "/CN=$cn${o:+/O=$o}" 2>/dev/null
		{
			echo "basicConstraints=CA:FALSE"
			echo "keyUsage=digitalSignature,keyEncipherment"
			echo "extendedKeyUsage=serverAuth,clientAuth"
			[ -z "$san" ] || echo "subjectAltName=$san"
		} >"$name.ext"
		openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -out "$name.pem" -days 2 -extfile "$name.ext" 2>/dev/null
	}
	cert apiserver kube-apiserver "" "IP:$NODE_IP,IP:$SVC_API,IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,DNS:localhost"
	# One client identity for every component and the test: a throw-away
	# cluster on one machine, no one else on it.
	cert admin admin system:masters ""
	cert kubelet "system:node:$NODE_NAME" system:nodes "IP:$NODE_IP,DNS:$NODE_NAME"
	openssl genrsa -out sa.key 2048 2>/dev/null
	openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
	cat >"$K8S_RUN/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: arbor-k8s
  cluster:
    server: https://$NODE_IP:6443
    certificate-authority: $d/ca.pem
users:
- name: admin
  user:
    client-certificate: $d/admin.pem
    client-key: $d/admin.key
contexts:
- name: arbor-k8s
  context: {cluster: arbor-k8s, user: admin}
current-context: arbor-k8s
EOF
	cd - >/dev/null
}

network() {
	# The node's address, on a bridge without ports.
	ip link add arbk-node0 type bridge
	ip addr add "$NODE_IP/32" dev arbk-node0
	ip link set arbk-node0 up
	# The pods' bridge, made here (the CNI bridge plugin adopts it) so that
	# the guard below exists before any pod does.
	ip link add arbk-cni0 type bridge
	ip addr add "$POD_GW/24" dev arbk-cni0
	ip link set arbk-cni0 up
	# The backstop: what is not a local address, a pod or a translated
	# Service address goes nowhere.
	ip route add blackhole "$SVC_CIDR"
	ip route add blackhole "$NODE_RANGE"
	# The test client's namespace.
	ip netns add "$CLIENT_NS"
	ip link add arbk-cl0 type veth peer name arbk-cl1
	ip link set arbk-cl1 netns "$CLIENT_NS"
	ip addr add "$CLIENT_HOST_IP/30" dev arbk-cl0
	ip link set arbk-cl0 up
	ip -n "$CLIENT_NS" link set lo up
	ip -n "$CLIENT_NS" addr add "$CLIENT_IP/30" dev arbk-cl1
	ip -n "$CLIENT_NS" link set arbk-cl1 up
	for r in "$POD_CIDR" "$SVC_CIDR" "$NODE_IP/32"; do
		ip -n "$CLIENT_NS" route add "$r" via "$CLIENT_HOST_IP"
	done
	# Forwarding between our interfaces only; anything else arriving on
	# them is dropped (Docker's FORWARD policy is DROP as well).
	iptables -N ARBK-GUARD
	iptables -A ARBK-GUARD -i arbk-cni0 -o arbk-cni0 -j ACCEPT
	iptables -A ARBK-GUARD -i arbk-cni0 -o arbk-cl0 -j ACCEPT
	iptables -A ARBK-GUARD -i arbk-cl0 -o arbk-cni0 -j ACCEPT
	iptables -A ARBK-GUARD -i arbk-cni0 -j DROP
	iptables -A ARBK-GUARD -i arbk-cl0 -j DROP
	iptables -A ARBK-GUARD -s "$POD_CIDR" -j DROP
	iptables -A ARBK-GUARD -s "$CLIENT_IP" -j DROP
	iptables -I FORWARD 1 -j ARBK-GUARD
	mkdir -p "$K8S_RUN/cni"
	cat >"$K8S_RUN/cni/10-arbor.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "arbor-k8s",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "arbk-cni0",
      "isGateway": true,
      "isDefaultGateway": false,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$K8S_RUN/cni-ipam",
        "ranges": [[{"subnet": "$POD_CIDR", "rangeStart": "10.244.0.10", "rangeEnd": "10.244.0.250", "gateway": "$POD_GW"}]],
        "routes": [
          {"dst": "$SVC_CIDR", "gw": "$POD_GW"},
          {"dst": "$NODE_RANGE", "gw": "$POD_GW"}
        ]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": false}
  ]
}
EOF
}

containerd_up() {
	cat >"$K8S_RUN/containerd.toml" <<EOF
version = 2
root = "$K8S_RUN/containerd/root"
state = "$K8S_RUN/containerd/state"
[grpc]
  address = "$K8S_RUN/containerd.sock"
[ttrpc]
  address = "$K8S_RUN/containerd-ttrpc.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  # This machine withholds CAP_SYS_RESOURCE: without this every sandbox
  # fails to start (runc: can't get final child's PID from pipe: EOF).
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$K8S_RUN/cni"
EOF
	start containerd containerd --config "$K8S_RUN/containerd.toml"
	wait_for containerd 30 ctr -a "$K8S_RUN/containerd.sock" version
}

# import_images: a `docker save` archive on stdin into the namespace the
# kubelet's images live in (there is no registry to pull from).
import_images() {
	ctr -a "$K8S_RUN/containerd.sock" -n k8s.io images import - >/dev/null
}

kubelet_up() {
	local bin="$1"
	mkdir -p "$K8S_RUN/kubelet"
	: >"$K8S_RUN/resolv.conf"
	cat >"$K8S_RUN/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: 10250
healthzBindAddress: 127.0.0.1
healthzPort: 10248
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $K8S_RUN/pki/ca.pem}
authorization: {mode: AlwaysAllow}
tlsCertFile: $K8S_RUN/pki/kubelet.pem
tlsPrivateKeyFile: $K8S_RUN/pki/kubelet.key
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$K8S_RUN/containerd.sock
imageServiceEndpoint: unix://$K8S_RUN/containerd.sock
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: [$NODE_IP]
resolvConf: $K8S_RUN/resolv.conf
# A test machine: keep running at high disk use, do not garbage-collect
# the locally imported images (there is no registry to pull them back).
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
syncFrequency: 10s
fileCheckFrequency: 10s
maxPods: 30
podPidsLimit: 4096
protectKernelDefaults: false
makeIPTablesUtilChains: true
localStorageCapacityIsolation: false
EOF
	start kubelet "$bin/kubelet" --config "$K8S_RUN/kubelet.yaml" --kubeconfig "$K8S_RUN/kubeconfig" \
		--root-dir "$K8S_RUN/kubelet" --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --v=1
}

up() {
	local bin="${1:?usage: cluster.sh up BIN_DIR}"
	if [ -e "$K8S_RUN/pids" ]; then
		log "$K8S_RUN holds a cluster already: scripts/k8s/cluster.sh down first"
		return 1
	fi
	mkdir -p "$K8S_RUN/pids" "$K8S_RUN/logs" "$K8S_RUN/pv"
	# What exists before we start, so that down removes only ours.
	ls /var/run/netns 2>/dev/null >"$K8S_RUN/netns-before" || true
	# The kernel settings the kubelet changes (it insists on them): put
	# back by down.
	for k in $KUBELET_SYSCTLS; do echo "$k=$(sysctl -n "$k")"; done >"$K8S_RUN/sysctl-before"
	pki
	network
	log "network up: node $NODE_IP, pods $POD_CIDR, Services $SVC_CIDR (blackholed on the host), client namespace $CLIENT_NS ($CLIENT_IP)"

	start etcd etcd --name arbor-k8s --data-dir "$K8S_RUN/etcd" \
		--listen-client-urls http://127.0.0.1:23790 --advertise-client-urls http://127.0.0.1:23790 \
		--listen-peer-urls http://127.0.0.1:23800 --initial-advertise-peer-urls http://127.0.0.1:23800 \
		--initial-cluster arbor-k8s=http://127.0.0.1:23800 \
		--quota-backend-bytes 1073741824
	wait_for etcd 30 curl -fsS http://127.0.0.1:23790/health

	local p="$K8S_RUN/pki"
	start kube-apiserver "$bin/kube-apiserver" --etcd-servers http://127.0.0.1:23790 \
		--bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port 6443 \
		--service-cluster-ip-range "$SVC_CIDR" \
		--tls-cert-file "$p/apiserver.pem" --tls-private-key-file "$p/apiserver.key" \
		--client-ca-file "$p/ca.pem" \
		--service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--authorization-mode Node,RBAC \
		--kubelet-client-certificate "$p/admin.pem" --kubelet-client-key "$p/admin.key" \
		--kubelet-certificate-authority "$p/ca.pem" \
		--kubelet-preferred-address-types InternalIP,Hostname \
		--enable-admission-plugins NodeRestriction \
		--profiling=false --v=1
	wait_for kube-apiserver 90 "$bin/kubectl" --kubeconfig "$K8S_RUN/kubeconfig" get --raw /readyz

	start kube-controller-manager "$bin/kube-controller-manager" --kubeconfig "$K8S_RUN/kubeconfig" \
		--authentication-kubeconfig "$K8S_RUN/kubeconfig" --authorization-kubeconfig "$K8S_RUN/kubeconfig" \
		--bind-address 127.0.0.1 --leader-elect=false \
		--service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.pem" \
		--cluster-cidr "$POD_CIDR" --allocate-node-cidrs=false --service-cluster-ip-range "$SVC_CIDR" \
		--use-service-account-credentials=false --profiling=false --v=1
	start kube-scheduler "$bin/kube-scheduler" --kubeconfig "$K8S_RUN/kubeconfig" \
		--authentication-kubeconfig "$K8S_RUN/kubeconfig" --authorization-kubeconfig "$K8S_RUN/kubeconfig" \
		--bind-address 127.0.0.1 --leader-elect=false --profiling=false --v=1

	containerd_up
	kubelet_up "$bin"
	cat >"$K8S_RUN/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $K8S_RUN/kubeconfig}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $POD_CIDR
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
# Leave the host's conntrack sysctls alone.
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {syncPeriod: 5s, minSyncPeriod: 0s, localhostNodePorts: false}
EOF
	start kube-proxy "$bin/kube-proxy" --config "$K8S_RUN/kube-proxy.yaml" --v=1
	cat >"$K8S_RUN/Corefile" <<EOF
.:53 {
    bind $NODE_IP
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $K8S_RUN/kubeconfig arbor-k8s
        pods insecure
        ttl 5
        fallthrough in-addr.arpa ip6.arpa
    }
}
EOF
	start coredns "$bin/coredns" -conf "$K8S_RUN/Corefile"

	local k=("$bin/kubectl" --kubeconfig "$K8S_RUN/kubeconfig")
	wait_for "node $NODE_NAME Ready" 120 "${k[@]}" wait --for=condition=Ready "node/$NODE_NAME" --timeout=1s
	# Storage: pre-made hostPath volumes of a default StorageClass without a
	# provisioner. Each directory belongs to the image's user (hostPath
	# volumes ignore fsGroup); a claim deleted with its pod leaves its
	# volume Released, and the next claim binds a fresh one.
	{
		cat <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: arbor-local
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: kubernetes.io/no-provisioner
reclaimPolicy: Retain
volumeBindingMode: WaitForFirstConsumer
EOF
		for i in $(seq 1 "$PV_COUNT"); do
			mkdir -p "$K8S_RUN/pv/pv$i"
			chown 65532:65532 "$K8S_RUN/pv/pv$i"
			chmod 0700 "$K8S_RUN/pv/pv$i"
			cat <<EOF
---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: arbor-pv$i
spec:
  storageClassName: arbor-local
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  hostPath: {path: $K8S_RUN/pv/pv$i, type: Directory}
EOF
		done
	} | "${k[@]}" apply -f - >/dev/null
	log "cluster up: kubectl --kubeconfig $K8S_RUN/kubeconfig; logs in $K8S_RUN/logs"
}

# kill_pid NAME: SIGTERM the recorded process, SIGKILL after 10 s.
kill_pid() {
	local f="$K8S_RUN/pids/$1"
	[ -f "$f" ] || return 0
	local pid
	pid="$(cat "$f")"
	# Every process up started names $K8S_RUN on its command line; a PID
	# left by a run before a reboot may belong to someone else now.
	if kill -0 "$pid" 2>/dev/null && grep -qF -- "$K8S_RUN" "/proc/$pid/cmdline" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		local deadline=$((SECONDS + 10))
		while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

down() {
	local bin="${1:-}"
	[ -d "$K8S_RUN" ] || {
		log "nothing to tear down ($K8S_RUN absent)"
		return 0
	}
	log "tearing down the cluster in $K8S_RUN"
	# Best effort from here on: a run cut off at any point (even before its
	# first mount) leaves some of these absent, and a step that finds
	# nothing to remove must not stop the ones after it.
	set +e +o pipefail
	for c in coredns kube-proxy kube-scheduler kube-controller-manager kubelet; do kill_pid "$c"; done
	local sock="$K8S_RUN/containerd.sock"
	if alive containerd; then
		# Stop every container of ours, then the shims that ran them.
		local ids
		ids="$(ctr -a "$sock" -n k8s.io tasks ls -q 2>/dev/null || true)"
		for id in $ids; do ctr -a "$sock" -n k8s.io tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
		for id in $ids; do ctr -a "$sock" -n k8s.io tasks delete -f "$id" >/dev/null 2>&1 || true; done
	fi
	kill_pid containerd
	# The shims outlive containerd: find ours by the socket they were
	# given (their command line names it), and stop them by PID.
	# (grep -z: one argument per line, -x: the whole argument.)
	local f
	for f in $(grep -lzxF -- "$sock" /proc/[0-9]*/cmdline 2>/dev/null); do
		f="${f#/proc/}"
		kill -KILL "${f%/cmdline}" 2>/dev/null || true
	done
	# Any process still running a container of ours: its cgroup is under
	# the kubelet's kubepods.
	for f in $(grep -l ':/kubepods' /proc/[0-9]*/cgroup 2>/dev/null); do
		f="${f#/proc/}"
		kill -KILL "${f%/cgroup}" 2>/dev/null || true
	done
	for c in kube-apiserver etcd; do kill_pid "$c"; done
	# kube-proxy's and the kubelet's iptables rules.
	[ -z "$bin" ] || [ ! -x "$bin/kube-proxy" ] || "$bin/kube-proxy" --cleanup >/dev/null 2>&1 || true
	for ipt in iptables ip6tables; do
		for table in filter nat mangle; do
			local chains
			chains="$($ipt -t $table -S 2>/dev/null | awk '$1 == "-N" && ($2 ~ /^KUBE-/ || $2 == "ARBK-GUARD") {print $2}')" || true
			[ -n "$chains" ] || continue
			# Rules of the built-in chains that jump to them.
			$ipt -t $table -S 2>/dev/null | awk '$1 == "-A"' | while read -r line; do
				for c in $chains; do
					if [[ " $line " == *" -j $c "* ]]; then
						# shellcheck disable=SC2086
						$ipt -t $table ${line/-A/-D} 2>/dev/null || true
						break
					fi
				done
			done
			for c in $chains; do $ipt -t $table -F "$c" 2>/dev/null || true; done
			for c in $chains; do $ipt -t $table -X "$c" 2>/dev/null || true; done
		done
	done
	# Mounts under our state (secrets, the containers' root file systems,
	# the pods' network namespaces), deepest first.
	{ findmnt -rn -o TARGET | grep -F "$K8S_RUN/" || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
	# The pods' network namespaces (new since up) and the client's.
	for ns in $(ls /var/run/netns 2>/dev/null); do
		if [ "$ns" = "$CLIENT_NS" ] || { [[ "$ns" == cni-* ]] && ! grep -qx "$ns" "$K8S_RUN/netns-before" 2>/dev/null; }; then
			ip netns del "$ns" 2>/dev/null || true
		fi
	done
	# The pods' veths (their other ends would go with their namespaces,
	# but the kernel frees those late), then our links.
	for l in $(ip -o link show master arbk-cni0 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
		ip link del "$l" 2>/dev/null || true
	done
	for l in arbk-cl0 arbk-cni0 arbk-node0; do ip link del "$l" 2>/dev/null || true; done
	ip route del blackhole "$SVC_CIDR" 2>/dev/null || true
	ip route del blackhole "$NODE_RANGE" 2>/dev/null || true
	# The kubelet's cgroups, deepest first.
	for h in /sys/fs/cgroup/*/kubepods; do
		[ -d "$h" ] && find "$h" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
	if [ -f "$K8S_RUN/sysctl-before" ]; then
		while read -r kv; do sysctl -q -w "$kv" >/dev/null 2>&1 || true; done <"$K8S_RUN/sysctl-before"
	fi
	rm -rf "$K8S_RUN" || {
		log "could not remove $K8S_RUN"
		return 1
	}
	log "torn down"
}

case "${1:-}" in
up) up "${2:-}" ;;
down) down "${2:-}" ;;
import) import_images ;;
*)
	echo "usage: $0 up BIN_DIR | down [BIN_DIR] | import - (a docker save archive)" >&2
	exit 2
	;;
esac
