#!/usr/bin/env bash
# Builds the single-node Kubernetes control plane of `make test-k8s` from the
# Go module proxy, once per version: kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet, kube-proxy and kubectl from k8s.io/kubernetes
# (scripts/k8s/build/go.mod), and CoreDNS (scripts/k8s/coredns/go.mod). The
# binaries are cached outside the clone, in $K8S_CACHE/<version>/bin
# (default /var/cache/arbor-k8s), so that a warm run skips the build: about
# 12 minutes of CPU on 2 cores cold, nothing warm.
#
#   scripts/k8s/build.sh        # prints the bin directory on its last line
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
K8S_VERSION="$(awk '$1 == "require" && $2 == "k8s.io/kubernetes" {print $3}' "$here/build/go.mod")"
COREDNS_VERSION="$(awk '$1 == "require" && $2 == "github.com/coredns/coredns" {print $3}' "$here/coredns/go.mod")"
K8S_CACHE="${K8S_CACHE:-/var/cache/arbor-k8s}"
out="$K8S_CACHE/$K8S_VERSION"
bin="$out/bin"
mkdir -p "$bin"

cmds=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl)
missing=()
for c in "${cmds[@]}"; do [ -x "$bin/$c" ] || missing+=("$c"); done
if [ ${#missing[@]} -gt 0 ]; then
	echo "k8s: building ${missing[*]} $K8S_VERSION into $bin (cold: about 12 minutes of CPU on 2 cores)" >&2
	src="$out/src"
	rm -rf "$src" && mkdir -p "$src"
	cp "$here/build/go.mod" "$src/"
	[ ! -f "$here/build/go.sum" ] || cp "$here/build/go.sum" "$src/"
	major="${K8S_VERSION#v}"; major="${major%%.*}"
	minor="${K8S_VERSION#v*.}"; minor="${minor%%.*}"
	ldflags="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags="$ldflags -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
	done
	start=$(date +%s)
	for c in "${missing[@]}"; do
		(cd "$src" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "$ldflags" -o "$bin/$c.tmp" "k8s.io/kubernetes/cmd/$c")
		mv "$bin/$c.tmp" "$bin/$c"
		echo "k8s: built $c ($(( $(date +%s) - start )) s so far)" >&2
	done
fi

if [ ! -x "$bin/coredns" ]; then
	echo "k8s: building coredns $COREDNS_VERSION into $bin (cold: about 6 minutes of CPU)" >&2
	src="$out/coredns-src"
	rm -rf "$src" && mkdir -p "$src"
	cp "$here/coredns/go.mod" "$src/"
	[ ! -f "$here/coredns/go.sum" ] || cp "$here/coredns/go.sum" "$src/"
	(cd "$src" && CGO_ENABLED=0 go build -mod=mod -trimpath -ldflags "-s -w" -o "$bin/coredns.tmp" github.com/coredns/coredns)
	mv "$bin/coredns.tmp" "$bin/coredns"
fi
echo "$bin"
