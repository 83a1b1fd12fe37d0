package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string // "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"zero config takes defaults", func(c *Config) { *c = Config{NodeID: "n"} }, ""},
		{"fast timing", func(c *Config) { c.Timing = FastTiming() }, ""},
		{"port zero", func(c *Config) { c.RaftAddr = "127.0.0.1:0" }, ""},
		{"no port", func(c *Config) { c.RaftAddr = "localhost" }, "raft address"},
		{"bad port", func(c *Config) { c.RaftAddr = ":99999" }, "bad port"},
		{"negative expect", func(c *Config) { c.BootstrapExpect = -1 }, "at least 1"},
		{"expect three needs discovery", func(c *Config) { c.BootstrapExpect = 3 }, "discovery"},
		{"negative write timeout", func(c *Config) { c.WriteTimeout = -time.Second }, "negative"},
		{"lease above heartbeat", func(c *Config) {
			c.Timing = Timing{HeartbeatTimeout: 100 * time.Millisecond, LeaderLeaseTimeout: time.Second}
		}, "LeaderLeaseTimeout"},
		{"election below heartbeat", func(c *Config) {
			c.Timing = FastTiming()
			c.Timing.HeartbeatTimeout = time.Second
		}, "ElectionTimeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			c.NodeID = "n1"
			tt.edit(&c)
			err := c.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestRaftConfigFromConfig(t *testing.T) {
	c := Config{NodeID: "n7", SnapshotThreshold: 50, TrailingLogs: 7, Timing: FastTiming()}.withDefaults()
	rc := c.raftConfig(testLogger(t))
	if rc.LocalID != "n7" || rc.SnapshotThreshold != 50 || rc.TrailingLogs != 7 ||
		rc.HeartbeatTimeout != 250*time.Millisecond || rc.ShutdownOnRemove || rc.Logger == nil {
		t.Fatalf("raft config = %+v", rc)
	}
	if d := DefaultConfig(); d.WriteTimeout != 5*time.Second || d.BootstrapExpect != 1 ||
		d.RaftAddr != ":8300" || d.Timing.SnapshotInterval != 30*time.Second {
		t.Fatalf("DefaultConfig = %+v", d)
	}
}
