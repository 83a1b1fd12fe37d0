package cluster

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestHCLogAdapter(t *testing.T) {
	var buf bytes.Buffer
	l := newHCLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "raft")

	l.Debug("hidden", "k", 1)
	if buf.Len() != 0 {
		t.Fatalf("debug line logged at info level: %s", buf.String())
	}
	if l.IsDebug() || !l.IsInfo() || l.GetLevel() != hclog.Info {
		t.Fatalf("level checks wrong: debug=%v info=%v level=%v", l.IsDebug(), l.IsInfo(), l.GetLevel())
	}

	l.Named("net").With("peer", "n2").Warn("slow", "took", "3s", "dangling")
	got := buf.String()
	for _, want := range []string{"level=WARN", `msg=slow`, "component=raft.net", "peer=n2", "took=3s", "extra=dangling"} {
		if !strings.Contains(got, want) {
			t.Errorf("log line %q lacks %q", got, want)
		}
	}

	buf.Reset()
	l.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}).Print("[ERR] broken pipe")
	if got := buf.String(); !strings.Contains(got, "level=ERROR") || !strings.Contains(got, `msg="broken pipe"`) {
		t.Errorf("standard logger line = %q", got)
	}

	buf.Reset()
	l.SetLevel(hclog.Error)
	l.Warn("suppressed")
	if buf.Len() != 0 {
		t.Errorf("SetLevel(Error) did not suppress a warning: %s", buf.String())
	}
}

// TestHCLogAdapterRendersFormats: Raft's hclog.Fmt values (its
// configuration, snapshot progress) read as text, without format verbs.
func TestHCLogAdapterRendersFormats(t *testing.T) {
	var buf bytes.Buffer
	l := newHCLogger(slog.New(slog.NewTextHandler(&buf, nil)), "raft")
	l.Info("initial configuration", "servers", hclog.Fmt("%+v", []struct{ ID string }{{"n1"}}))
	l.Info("snapshot restore progress", "percent-complete", hclog.Fmt("%0.2f%%", 100.0), "flags", hclog.Hex(255))
	got := buf.String()
	for _, want := range []string{`servers=[{ID:n1}]`, `percent-complete=100.00%`, "flags=0xff"} {
		if !strings.Contains(got, want) {
			t.Errorf("log %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "%+v") || strings.Contains(got, "%0.2f") {
		t.Errorf("format verbs leaked: %q", got)
	}
}

// TestHCLogAdapterFirstElectionIsInfo: the election a node calls when it
// has never heard of a leader is routine; one after losing a leader is
// still a warning.
func TestHCLogAdapterFirstElectionIsInfo(t *testing.T) {
	var buf bytes.Buffer
	l := newHCLogger(slog.New(slog.NewTextHandler(&buf, nil)), "raft")
	l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "", "last-leader-id", "")
	if got := buf.String(); !strings.Contains(got, "level=INFO") {
		t.Errorf("first election logged as %q, want INFO", got)
	}
	buf.Reset()
	l.Warn("heartbeat timeout reached, starting election", "last-leader-addr", "10.0.0.2:8300", "last-leader-id", "n2")
	if got := buf.String(); !strings.Contains(got, "level=WARN") {
		t.Errorf("election after losing leader n2 logged as %q, want WARN", got)
	}
}

// TestStateLinesAgreeWithRaftOnTerm: a lone node's first election, as
// logged by Raft and by the node, names one term.
func TestStateLinesAgreeWithRaftOnTerm(t *testing.T) {
	var logs syncBuffer
	cfg := testConfig(t, t.TempDir())
	cfg.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	n, _ := startNode(t, cfg)
	waitReady(t, n)
	raftTerm := map[string]float64{} // state → term Raft announced
	var checked int
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		term, hasTerm := rec["term"].(float64)
		switch rec["msg"] {
		case "entering candidate state":
			raftTerm["Candidate"] = term
		case "election won":
			raftTerm["Leader"] = term
		case "raft state changed":
			state := rec["state"].(string)
			want, known := raftTerm[state]
			if hasTerm && known && term != want {
				t.Errorf("node logged %s in term %v, Raft announced term %v", state, term, want)
			}
			if hasTerm && state == "Candidate" {
				t.Errorf("node logged a candidate's term (%v) before Raft raised it", term)
			}
			checked++
		}
	}
	if checked == 0 || raftTerm["Leader"] == 0 {
		t.Fatalf("no state change or election in the logs:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the node's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
