package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/watch"
	"github.com/arbordb/arbor/cmd/internal/history"
)

func TestParseConfig(t *testing.T) {
	c, err := parseConfig([]string{"-seed", "42", "-duration", "30m", "-faults", "kill,pause", "-clients", "6"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.Seed != 42 || c.Duration != 30*time.Minute || c.Workload.Clients != 6 {
		t.Errorf("config %+v", c)
	}
	want := "arbor-chaos -backend process -seed 42 -duration 30m0s -faults kill,pause -arbor bin/arbor -clients 6"
	if got := c.replay("process"); got != want {
		t.Errorf("replay\n got %s\nwant %s", got, want)
	}
	c, err = parseConfig(nil, io.Discard)
	if err != nil || c.Seed == 0 && c.seedSet {
		t.Errorf("defaults: %+v %v", c, err)
	}
	c, _ = parseConfig([]string{"-seed", "1", "-judge-local-reads", "-local-reads", "0.5"}, io.Discard)
	if got := c.replay("docker"); !strings.HasSuffix(got, "-local-reads 0.5 -judge-local-reads") {
		t.Errorf("replay of the self-test: %s", got)
	}
	for _, bad := range [][]string{
		{"-backend", "vm"},
		{"-duration", "0s"},
		{"-write-timeout", "10s", "-request-timeout", "5s"},
		{"-raft-timeout", "-1s"},
		{"-clients", "0"},
		{"-roaming", "12"},
		{"-watchers", "-1"},
		{"extra"},
	} {
		if _, err := parseConfig(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestRecheck judges saved histories: a clean one passes, one with a
// stale read fails and gets its visualization.
func TestRecheck(t *testing.T) {
	op := func(typ history.Type, v string, call, ret int64, final bool) history.Op {
		o := history.Op{Node: "n1", Key: "reg/g0/k0", Kind: history.Register, Type: typ, Outcome: history.OK, Status: 200, Call: call, Return: ret, Final: final}
		if typ == history.Read {
			o.Out = v
		} else {
			o.Value = v
		}
		return o
	}
	for _, c := range []struct {
		name string
		ops  []history.Op
		code int
	}{
		{"clean", []history.Op{op(history.Write, `"a"`, 0, 10, false), op(history.Read, `"a"`, 20, 30, false), op(history.Read, `"a"`, 40, 50, true)}, exitPass},
		{"stale", []history.Op{op(history.Write, `"a"`, 0, 10, false), op(history.Write, `"b"`, 20, 30, false), op(history.Read, `"a"`, 40, 50, false), op(history.Read, `"b"`, 60, 70, true)}, exitFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i := range c.ops {
				c.ops[i].ID = i
				c.ops[i].Client = i
			}
			dir := t.TempDir()
			path := filepath.Join(dir, "history.jsonl")
			if err := history.WriteFile(path, c.ops); err != nil {
				t.Fatal(err)
			}
			cfg := defaultConfig()
			cfg.Check = path
			var out strings.Builder
			if code := recheck(cfg, &out); code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, out.String())
			}
			_, err := os.Stat(filepath.Join(dir, "viz", "reg_g0_k0.html"))
			if (c.code == exitFail) != (err == nil) {
				t.Errorf("visualization: %v\n%s", err, out.String())
			}
		})
	}
}

// TestRecheckJudgesStreams: a saved watchers.json next to the history is
// judged too; a watcher that saw a value nobody wrote fails the run.
func TestRecheckJudgesStreams(t *testing.T) {
	ops := []history.Op{{ID: 0, Node: "n1", Key: "reg/g0/k0", Kind: history.Register, Type: history.Write, Value: `"a"`, Outcome: history.OK, Status: 200, Call: 10, Return: 20},
		{ID: 1, Client: 1, Node: "n1", Key: "reg/g0/k0", Kind: history.Register, Type: history.Read, Out: `"a"`, Outcome: history.OK, Status: 200, Call: 30, Return: 40, Final: true}}
	final := `{"reg":{"g0":{"k0":"a"}},"watch-end":"end"}`
	for _, c := range []struct {
		name  string
		value string
		code  int
	}{
		{"clean", `"a"`, exitPass},
		{"phantom", `"b"`, exitFail},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "history.jsonl")
			if err := history.WriteFile(path, ops); err != nil {
				t.Fatal(err)
			}
			f := watch.File{Final: final, Watchers: []watch.Record{{
				Streams: []watch.Stream{{Node: "n1", How: "initial", Events: 2}},
				Puts:    []watch.Put{{Index: 5, At: 1}},
				Last:    16,
				Keys:    map[string][]watch.Obs{"reg/g0/k0": {{Index: 12, Value: c.value}}, watch.MarkerKey: {{Index: 16, Value: `"end"`}}},
				Copy:    final,
			}}}
			if err := watch.WriteFile(filepath.Join(dir, watchersFile), f); err != nil {
				t.Fatal(err)
			}
			cfg := defaultConfig()
			cfg.Check = path
			var out strings.Builder
			if code := recheck(cfg, &out); code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, out.String())
			}
			if !strings.Contains(out.String(), "streams: 1 watchers") || !strings.Contains(out.String(), "stream values were written") {
				t.Errorf("no stream figures or checks in\n%s", out.String())
			}
		})
	}
}
