// Package tree is Arbor's JSON data model: paths and keys in Firebase key
// order, the immutable (persistent) tree of nodes with cached hashes and
// sizes, the body parser, rendering, writes and merges that copy only the
// written paths, and queries (with their indexes) evaluated over a tree.
// It knows nothing of commands, logs, snapshots, rules or HTTP.
package tree
