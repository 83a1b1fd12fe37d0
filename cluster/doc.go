// Package cluster wires a node's replicated state around an fsm.FSM: the
// Raft log and stable store (raft-boltdb), snapshots, the cluster port
// (Raft and forwarding over mutual TLS), discovery and bootstrap
// (memberlist), membership, the write path (Propose, forwarded to the
// leader) and the linearizable read barrier (Read).
package cluster
