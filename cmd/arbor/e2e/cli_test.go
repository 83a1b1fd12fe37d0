package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestVersionCommand(t *testing.T) {
	code, out := Run(t, "version")
	if code != 0 || !strings.HasPrefix(out, "arbor ") || !strings.Contains(out, "entry format:") || !strings.Contains(out, "snapshot format:") {
		t.Errorf("arbor version: exit %d, output:\n%s", code, out)
	}
}

func TestServeRejectsBadConfiguration(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never-created")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-format", "xml"}, `--log-format "xml": want text or json`},
		{[]string{"--bootstrap-expect", "3"}, "needs --tls-ca"},
		{[]string{"--join", "10.0.0.2:8301"}, "needs --tls-ca"},
		{[]string{"--tls-cert", "cert.pem"}, "--tls-cert and --tls-key: give both or neither"},
	} {
		code, out := Run(t, append([]string{"serve", "--data-dir", dir}, c.args...)...)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("serve %q: exit %d, output %q; want exit 2 and %q", c.args, code, out, c.want)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a rejected configuration touched the data directory: %v", err)
	}
}

// TestHTTPPortInUse: a node that cannot listen exits non-zero, saying why,
// after releasing its data directory (a restart on it works).
func TestHTTPPortInUse(t *testing.T) {
	first := StartReadyNode(t, Options{Name: "first"})
	dir := filepath.Join(t.TempDir(), "second")
	code, out := Run(t, "serve", "--data-dir", dir, "--node-id", "second",
		"--http-addr", first.Addr(), "--raft-addr", "127.0.0.1:0")
	if code != 1 || !strings.Contains(out, "listen for HTTPS") || !strings.Contains(out, "address already in use") {
		t.Fatalf("exit %d, output:\n%s", code, out)
	}
	StartReadyNode(t, Options{Name: "second", DataDir: dir})
}
