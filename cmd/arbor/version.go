package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/arbordb/arbor/fsm"
)

// version and commit are stamped by the linker (see the Makefile's build
// target: -X main.version=… -X main.commit=…, the version from `git
// describe`); a plain `go build` keeps these defaults so a hand-built
// binary never claims to be a release.
var (
	version = unstampedVersion
	commit  = "unknown"
)

// unstampedVersion is version's default, before the linker stamps it.
const unstampedVersion = "dev"

// release is the version this binary reports (`arbor version`, and to the
// other members): the stamped one, or else the module version the Go
// toolchain recorded, which is the release tag for a binary built with
// `go install github.com/arbordb/arbor/cmd/arbor@v1.2.3` (no Makefile, so
// no -X).
func release() string {
	return releaseFrom(version, debug.ReadBuildInfo)
}

// releaseFrom is release with its inputs injected for tests. The module
// version drops its "v" like the Makefile's, and "(devel)" (a build from a
// work tree without version information) is no version.
func releaseFrom(stamped string, buildInfo func() (*debug.BuildInfo, bool)) string {
	if stamped != unstampedVersion {
		return stamped
	}
	if info, ok := buildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return strings.TrimPrefix(info.Main.Version, "v")
	}
	return stamped
}

// printVersion writes what an operator needs before a rolling upgrade: the
// release, the commit, and the newest log entry and snapshot formats this
// binary can apply (it also applies every older one).
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "arbor %s\n", release())
	fmt.Fprintf(w, "commit:          %s\n", commit)
	fmt.Fprintf(w, "go:              %s\n", runtime.Version())
	fmt.Fprintf(w, "entry format:    %d (applies 1 to %d)\n", fsm.CommandVersion, fsm.CommandVersion)
	fmt.Fprintf(w, "snapshot format: %d (applies 1 to %d)\n", fsm.SnapshotVersion, fsm.SnapshotVersion)
}
