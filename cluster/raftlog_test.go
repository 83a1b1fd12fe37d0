package cluster

import (
	"bytes"
	"log/slog"
	"strings"
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
