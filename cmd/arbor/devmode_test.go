package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
)

// TestDevListensOnLoopback: --dev keeps Raft and gossip off the network
// unless an address is given, on the command line or in the environment.
func TestDevListensOnLoopback(t *testing.T) {
	for _, c := range []struct {
		env              map[string]string
		args             []string
		raft, gossipAddr string
	}{
		{nil, []string{"--dev"}, "127.0.0.1:8300", "127.0.0.1:8301"},
		{nil, []string{"--dev", "--raft-addr", ":9300"}, ":9300", "127.0.0.1:8301"},
		{map[string]string{"ARBOR_GOSSIP_ADDR": "10.0.0.5:9301"}, []string{"--dev"}, "127.0.0.1:8300", "10.0.0.5:9301"},
		{map[string]string{"ARBOR_DEV": "true"}, nil, "127.0.0.1:8300", "127.0.0.1:8301"},
		{nil, nil, ":8300", ":8301"},
	} {
		cfg, _, err := parse(t, c.env, c.args...)
		if err != nil {
			t.Fatalf("%v %q: %v", c.env, c.args, err)
		}
		if cfg.RaftAddr != c.raft || cfg.GossipAddr != c.gossipAddr {
			t.Errorf("%v %q: raft %s, gossip %s; want %s, %s", c.env, c.args, cfg.RaftAddr, cfg.GossipAddr, c.raft, c.gossipAddr)
		}
	}
}

// TestAnnounceDevNode: the open-rules warning appears only when no rules
// were ever set; a data directory with rules says so and how to reset
// them; both say where the node is.
func TestAnnounceDevNode(t *testing.T) {
	ready := func(context.Context) error { return nil }
	announce := func(r *fsm.Rules) string {
		var buf bytes.Buffer
		logger := slog.New(slog.NewTextHandler(&buf, nil))
		announceDevNode(context.Background(), ready, func() *fsm.Rules { return r }, "https://localhost:8443", logger, time.Millisecond, time.Minute)
		return buf.String()
	}
	open := announce(nil)
	if !strings.Contains(open, "level=WARN") || !strings.Contains(open, "open to everyone") {
		t.Errorf("no rules set: %q, want the open-rules warning", open)
	}
	set := announce(&fsm.Rules{Source: []byte(`{"rules":{}}`), Index: 7})
	if strings.Contains(set, "open to everyone") || strings.Contains(set, "level=WARN") {
		t.Errorf("rules set: %q warns that they are open", set)
	}
	for _, want := range []string{"has security rules", "rules_set_at_index=7", `/.settings/rules.json`, "empty --data-dir"} {
		if !strings.Contains(set, want) {
			t.Errorf("rules set: %q lacks %q", set, want)
		}
	}
	for _, out := range []string{open, set} {
		if !strings.Contains(out, "curl -k https://localhost:8443/.json") {
			t.Errorf("%q lacks the URL and a command to try", out)
		}
	}
}

func TestDevURL(t *testing.T) {
	for addr, want := range map[string]string{
		"[::]:8443":        "https://localhost:8443",
		"0.0.0.0:8443":     "https://localhost:8443",
		"127.0.0.1:9000":   "https://localhost:9000",
		"192.168.1.5:8443": "https://192.168.1.5:8443",
	} {
		if got := devURL(addr); got != want {
			t.Errorf("devURL(%q) = %q, want %q", addr, got, want)
		}
	}
}
