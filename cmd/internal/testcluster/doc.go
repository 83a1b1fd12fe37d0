// Package testcluster starts, stops, kills, pauses, restarts and
// partitions real arbor nodes — local processes or Docker containers —
// for the tools that test the binary from the outside: the end-to-end
// tests (cmd/arbor/e2e), the chaos runner (cmd/arbor-chaos) and the
// rolling-upgrade test (cmd/arbor-upgrade).
//
// The pieces, one file each:
//
//   - ports.go: free TCP+UDP ports on 127.0.0.1.
//   - process.go, procattr_*.go: one run of a binary (Proc), its output
//     captured, in its own process group if asked, killed with its parent
//     on Linux.
//   - localnode.go: a node run as local processes, one at a time, on the
//     same data (LocalNode).
//   - stop.go: SIGTERM with a goroutine dump for a node that hangs, for
//     processes and containers alike.
//   - docker.go, container.go, partition.go: the docker CLI, containers,
//     and networks that cut and heal the links between nodes.
//   - certs.go, flags.go, layout.go: a cluster's certificates, the serve
//     flags of its nodes, and where a run keeps certificates, data and
//     logs.
//   - health.go: /status and /readyz, and polling until a condition holds.
package testcluster
