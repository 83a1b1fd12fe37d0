package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/arbordb/arbor/fsm"
)

// version and commit are stamped by the linker (see the Makefile's build
// target: -X main.version=… -X main.commit=…); a plain `go build` keeps
// these defaults so a hand-built binary never claims to be a release.
var (
	version = "dev"
	commit  = "unknown"
)

// printVersion writes what an operator needs before a rolling upgrade: the
// release, the commit, and the newest log entry and snapshot formats this
// binary can apply (it also applies every older one).
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "arbor %s\n", version)
	fmt.Fprintf(w, "commit:          %s\n", commit)
	fmt.Fprintf(w, "go:              %s\n", runtime.Version())
	fmt.Fprintf(w, "entry format:    %d (applies 1 to %d)\n", fsm.CommandVersion, fsm.CommandVersion)
	fmt.Fprintf(w, "snapshot format: %d (applies 1 to %d)\n", fsm.SnapshotVersion, fsm.SnapshotVersion)
}
