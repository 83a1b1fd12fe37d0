// CoreDNS for `make test-k8s` (scripts/k8s/build.sh): the cluster DNS that
// gives the StatefulSet's pods their stable names. Not part of arbor's module.
module github.com/arbordb/arbor/scripts/k8s/coredns

go 1.24.0

require github.com/coredns/coredns v1.12.4
