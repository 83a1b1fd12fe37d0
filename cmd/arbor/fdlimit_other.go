//go:build !unix

package main

// raiseFDLimit has nothing to raise on this platform; the automatic
// connection limit then assumes a modest budget.
func raiseFDLimit() (uint64, error) { return 4096, nil }
