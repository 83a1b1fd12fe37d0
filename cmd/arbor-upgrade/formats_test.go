package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm"
)

func TestReleaseArgsGiveSnapshotFlagsToTheNewReleaseOnly(t *testing.T) {
	base := exampleServeArgs()
	if old := releaseArgs(base, false); !slices.Equal(old, base) {
		t.Errorf("old release args %v, want the base %v", old, base)
	}
	nw := releaseArgs(base, true)
	if !slices.Equal(nw[:len(base)], base) || !slices.Contains(nw, "--snapshot-interval") || !slices.Contains(nw, "--snapshot-threshold") {
		t.Errorf("new release args %v lack the snapshot flags", nw)
	}
	if len(base) != len(exampleServeArgs()) {
		t.Error("releaseArgs changed its argument")
	}
}

func TestUsageFlags(t *testing.T) {
	usage := "Usage: arbor serve [flags]\n\nFlags:\n  --admin-secret secret\n      secret token [$ARBOR_ADMIN_SECRET]\n" +
		"  --dev\n      development mode\n  --snapshot-threshold entries\n      log entries\n"
	got := usageFlags(usage)
	for _, want := range []string{"admin-secret", "dev", "snapshot-threshold"} {
		if !got[want] {
			t.Errorf("usageFlags missed %s: %v", want, got)
		}
	}
	if got["snapshot-interval"] || len(got) != 3 {
		t.Errorf("usageFlags = %v", got)
	}
}

func TestNewestSnapshot(t *testing.T) {
	dir := t.TempDir()
	if _, err := newestSnapshot(dir); !errors.Is(err, errNoSnapshot) {
		t.Fatalf("empty directory: %v, want errNoSnapshot", err)
	}
	write := func(name string, term, index uint64, state string) {
		t.Helper()
		d := filepath.Join(dir, "snapshots", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		meta, _ := json.Marshal(map[string]any{"Index": index, "Term": term, "Version": 1})
		if err := os.WriteFile(filepath.Join(d, "meta.json"), meta, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "state.bin"), []byte(state), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("2-900-1", 2, 900, snapshotMagic+"\x01rest")
	write("3-800-2", 3, 800, snapshotMagic+"\x02rest") // a later term wins over a higher index
	write("3-999-3.tmp", 3, 999, snapshotMagic+"\x01") // still being written
	sn, err := newestSnapshot(dir)
	if err != nil || sn.Name != "3-800-2" || sn.Index != 800 || sn.Format != 2 {
		t.Fatalf("newestSnapshot = %+v, %v", sn, err)
	}
	write("3-801-4", 3, 801, "NOTARBOR\x02")
	if _, err := newestSnapshot(dir); err == nil {
		t.Error("a foreign state.bin was accepted")
	}
}

func TestLargeValue(t *testing.T) {
	for _, n := range []int{mixedLargeBytes, upgradedLargeBytes, 10} {
		v := largeValue("tag", n)
		if len(v) != n || !strings.HasPrefix(v, "tag|") {
			t.Errorf("largeValue(%d) has %d bytes, starts %q", n, len(v), v[:min(len(v), 8)])
		}
	}
	if largeValue("a", 100) == largeValue("b", 100) {
		t.Error("different tags gave the same value")
	}
}

func TestAsUserAndErrorMessage(t *testing.T) {
	q, err := url.ParseQuery(asUser("alice"))
	if err != nil || q.Get("auth_variable_override") != `{"uid":"alice"}` {
		t.Errorf("asUser = %q (%v)", asUser("alice"), err)
	}
	if got := errorMessage([]byte("{\n  \"error\" : \"Service unavailable: not ready\"\n}\n")); got != msgNotReady {
		t.Errorf("errorMessage = %q", got)
	}
	if got := errorMessage([]byte(" plain ")); got != "plain" {
		t.Errorf("errorMessage of a non-JSON body = %q", got)
	}
}

func TestFollower(t *testing.T) {
	if follower("n1") != "n2" || follower("n2") != "n1" || follower("") != "n1" {
		t.Error("follower picks the wrong node")
	}
}

func TestRulesSourceHasTheMarker(t *testing.T) {
	if !strings.Contains(rulesSource, rulesMarker) || !strings.Contains(rulesSource, "//") {
		t.Error("the rules lack the marker or the comment the checks rely on")
	}
}

func TestCrossedFailsTheRunOnAViolation(t *testing.T) {
	r := &result{}
	r.crossed("mixed", "rules refused", "n3 503", nil)
	r.skipped("mixed", "a judged write", "no rules yet")
	if len(r.Failures) != 0 {
		t.Fatalf("a pass and a skip failed the run: %v", r.Failures)
	}
	r.crossed("mixed", "rules refused", "", errors.New("n3 200"))
	if len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "n3 200") {
		t.Fatalf("failures = %v", r.Failures)
	}
	if passed, skipped := r.formatCounts(); passed != 1 || skipped != 1 || len(r.Formats) != 3 || r.Formats[2].OK {
		t.Errorf("counts %d passed, %d skipped; checks %+v", passed, skipped, r.Formats)
	}
}

// TestFormatsToCross: a reference applying every format this tree writes
// leaves none to cross; an older one names the newer entry and snapshot
// formats.
func TestFormatsToCross(t *testing.T) {
	if got := formatsToCross(fsm.CommandVersion, fsm.SnapshotVersion); got != "" {
		t.Errorf("from this tree's own formats: %q, want none", got)
	}
	got := formatsToCross(fsm.CommandVersion-1, fsm.SnapshotVersion-1)
	if !strings.Contains(got, fmt.Sprintf("entry formats %d to %d", fsm.CommandVersion, fsm.CommandVersion)) ||
		!strings.Contains(got, fmt.Sprintf("snapshot formats %d to %d", fsm.SnapshotVersion, fsm.SnapshotVersion)) {
		t.Errorf("from one format older: %q", got)
	}
}
