package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClientSecret: --auth, then --auth-file, then ARBOR_AUTH, then the
// pod's own ARBOR_ADMIN_SECRET; both flags at once, an unreadable or empty
// file are errors.
func TestClientSecret(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secret")
	if err := os.WriteFile(file, []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"ARBOR_AUTH": "from-env", "ARBOR_ADMIN_SECRET": "pod-secret"}
	podOnly := map[string]string{"ARBOR_ADMIN_SECRET": "pod-secret"}
	for _, tt := range []struct {
		name       string
		flags      clientFlags
		env        map[string]string
		want, fail string
	}{
		{"flag", clientFlags{auth: "from-flag"}, env, "from-flag", ""},
		{"file", clientFlags{authFile: file}, env, "from-file", ""},
		{"ARBOR_AUTH", clientFlags{}, env, "from-env", ""},
		{"the pod's own secret", clientFlags{}, podOnly, "pod-secret", ""},
		{"none", clientFlags{}, nil, "", ""},
		{"both flags", clientFlags{auth: "a", authFile: file}, env, "", "not both"},
		{"missing file", clientFlags{authFile: filepath.Join(dir, "nope")}, env, "", "--auth-file"},
		{"empty file", clientFlags{authFile: empty}, env, "", "the file is empty"},
	} {
		got, err := tt.flags.secret(func(k string) string { return tt.env[k] })
		switch {
		case tt.fail != "" && (err == nil || !strings.Contains(err.Error(), tt.fail)):
			t.Errorf("%s: error %v, want one containing %q", tt.name, err, tt.fail)
		case tt.fail == "" && (err != nil || got != tt.want):
			t.Errorf("%s: %q, %v; want %q", tt.name, got, err, tt.want)
		}
	}
}
