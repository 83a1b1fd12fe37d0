package main

import (
	"runtime/debug"
	"testing"
)

// TestReleaseFrom: the stamped version wins; an unstamped binary reports
// the module version Go recorded from a tag, and "dev" without one.
func TestReleaseFrom(t *testing.T) {
	info := func(v string) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return &debug.BuildInfo{Main: debug.Module{Version: v}}, true }
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, c := range []struct {
		name, stamped string
		buildInfo     func() (*debug.BuildInfo, bool)
		want          string
	}{
		{"stamped by make", "1.2.3-4-gabcdef123456", info("v9.9.9"), "1.2.3-4-gabcdef123456"},
		{"go install @tag", unstampedVersion, info("v1.2.3"), "1.2.3"},
		{"work tree", unstampedVersion, info("(devel)"), unstampedVersion},
		{"no module version", unstampedVersion, info(""), unstampedVersion},
		{"no build info", unstampedVersion, none, unstampedVersion},
	} {
		if got := releaseFrom(c.stamped, c.buildInfo); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}
