package main

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// snapshotThreshold is the new release's --snapshot-threshold: low enough
// that under the test's load an upgraded node snapshots every few seconds
// (so the snapshot format is exercised, not only the log's), high enough
// that snapshots do not dominate the run.
const snapshotThreshold = 512

// snapshotInterval is the new release's --snapshot-interval: how often it
// checks the threshold (its default is tens of seconds).
const snapshotInterval = time.Second

// newReleaseFlags are the serve flags only the new release is given. The
// reference release knows --snapshot-threshold but not
// --snapshot-interval, so it keeps its own snapshot timing and never sees
// a flag it would refuse; checkServeFlags proves it before the run.
func newReleaseFlags() []string {
	return []string{
		"--snapshot-threshold", strconv.Itoa(snapshotThreshold),
		"--snapshot-interval", snapshotInterval.String(),
	}
}

// releaseArgs are a node's serve arguments on the old or the new release.
func releaseArgs(base []string, newRelease bool) []string {
	args := append([]string(nil), base...)
	if newRelease {
		args = append(args, newReleaseFlags()...)
	}
	return args
}

// checkServeFlags fails unless every flag in args is one that bin's
// `arbor serve -h` lists: a flag unknown to a release would stop its node
// at start-up, mid-upgrade, with a less obvious message.
func checkServeFlags(ctx context.Context, bin string, args []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// -h may exit non-zero; the usage text is what counts.
	out, _ := exec.CommandContext(ctx, bin, "serve", "-h").CombinedOutput()
	known := usageFlags(string(out))
	if len(known) == 0 {
		return fmt.Errorf("%s serve -h lists no flags: %q", bin, firstLine(string(out)))
	}
	var unknown []string
	for _, a := range args {
		name, isFlag := strings.CutPrefix(a, "--")
		name, _, _ = strings.Cut(name, "=")
		if isFlag && !known[name] {
			unknown = append(unknown, a)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%s serve does not know %s", bin, strings.Join(unknown, ", "))
	}
	return nil
}

// usageFlags reads the flag names from `arbor serve -h`, whose flag lines
// start with two spaces and "--name".
func usageFlags(usage string) map[string]bool {
	known := map[string]bool{}
	for _, line := range strings.Split(usage, "\n") {
		rest, ok := strings.CutPrefix(line, "  --")
		if !ok {
			continue
		}
		if name, _, _ := strings.Cut(rest, " "); name != "" {
			known[name] = true
		}
	}
	return known
}

// exampleServeArgs are the arguments either backend gives a node, with
// placeholder values: what checkServeFlags checks.
func exampleServeArgs() []string {
	return serveFlags(containerServe("n1"), "secret")
}

// checkReleaseFlags checks both binaries against the arguments their
// nodes will get.
func checkReleaseFlags(ctx context.Context, o options) error {
	if err := checkServeFlags(ctx, o.OldBin, releaseArgs(exampleServeArgs(), false)); err != nil {
		return fmt.Errorf("the old release: %w", err)
	}
	if err := checkServeFlags(ctx, o.NewBin, releaseArgs(exampleServeArgs(), true)); err != nil {
		return fmt.Errorf("the new release: %w", err)
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
