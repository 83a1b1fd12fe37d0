// Package fsm is Arbor's domain: paths, keys, values, the persistent in-memory
// JSON tree, versioned commands, the deterministic state machine that applies them
// (on plain types: the cluster package adapts it to Raft),
// snapshots and change events. It has no clocks, randomness or network: Apply
// is a pure function of the state and the log entry.
package fsm
