package httpapi

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/arbordb/arbor/httpapi/idtoken"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero Config invalid: %v", err)
	}
	for name, edit := range map[string]func(*Config){
		"empty admin secret": func(c *Config) { c.AdminSecrets = []string{"a", ""} },
		"bad consistency":    func(c *Config) { c.DefaultConsistency = "eventual" },
		"bad write limit":    func(c *Config) { c.DefaultWriteSizeLimit = "huge" },
		"negative timeout":   func(c *Config) { c.WriteTimeout = -time.Second },
	} {
		cfg := DefaultConfig()
		edit(&cfg)
		if err := cfg.Validate(); err == nil {
			t.Errorf("%s: Validate accepted it", name)
		}
		if _, err := New(cfg, newFSMDB()); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestNew(t *testing.T) {
	if _, err := New(DefaultConfig(), nil); err == nil {
		t.Error("New accepted a nil DB")
	}
	s, err := New(Config{}, newFSMDB())
	if err != nil {
		t.Fatalf("New(Config{}): %v", err)
	}
	if s.cfg.WriteTimeout != 5*time.Second || s.cfg.DefaultConsistency != ConsistencyLinearizable ||
		s.cfg.DefaultWriteSizeLimit != "medium" || s.cfg.Now == nil || s.cfg.Rand == nil || s.cfg.Gatherer == nil {
		t.Errorf("defaults not applied: %+v", s.cfg)
	}
	// Two servers may share a registry (their collectors are reused).
	reg := prometheus.NewRegistry()
	for i := 0; i < 2; i++ {
		cfg := DefaultConfig()
		cfg.Registerer = reg
		if _, err := New(cfg, newFSMDB()); err != nil {
			t.Fatalf("server %d on a shared registry: %v", i, err)
		}
	}
	// A configuration changed after New does not affect the server.
	cfg := DefaultConfig()
	cfg.AdminSecrets = []string{"one"}
	s, err = New(cfg, newFSMDB())
	if err != nil {
		t.Fatal(err)
	}
	cfg.AdminSecrets[0] = "two"
	if !s.isAdmin(idtoken.NewToken("one")) || s.isAdmin(idtoken.NewToken("two")) {
		t.Error("the server shares the caller's AdminSecrets slice")
	}
}
