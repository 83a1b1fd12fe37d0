// Package rules implements Firebase Realtime Database security rules: it
// parses a rules document (JSON with comments), type-checks every
// expression up front, and judges reads and writes against a JSON tree.
//
// The package is pure: judging a request depends only on the Ruleset, the
// Env and the trees it is given, never on clocks, randomness, I/O or map
// iteration order. The state machine evaluates rules inside Raft Apply, so
// every replica must reach the same verdict from the same log.
//
// Expressions are a small, statically checked subset of JavaScript. Errors
// found while evaluating one rule (a property of null, a type mismatch, a
// non-boolean result) make that rule false; exhausting the per-call
// evaluation budget denies the whole request. Nothing panics on any input.
package rules
