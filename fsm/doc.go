// Package fsm is Arbor's replicated state machine: versioned commands, the
// deterministic Apply of log entries to the JSON tree of package tree
// (on plain types: the cluster package adapts it to Raft), snapshots,
// change events, the security rules in force and the `.indexOn` indexes
// they declare. It has no clocks, randomness or network: Apply is a pure
// function of the state and the log entry.
package fsm
