package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/pki"
)

// envMap turns a map into the lookupEnv and environ arguments of
// parseServeConfig.
func envMap(m map[string]string) (func(string) (string, bool), []string) {
	var environ []string
	for k, v := range m {
		environ = append(environ, k+"="+v)
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }, environ
}

func parse(t *testing.T, env map[string]string, args ...string) (serveConfig, []string, error) {
	t.Helper()
	lookup, environ := envMap(env)
	return parseServeConfig(args, lookup, environ, io.Discard)
}

func TestServeConfigDefaults(t *testing.T) {
	cfg, warnings, err := parse(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Errorf("warnings: %v", warnings)
	}
	hostname, _ := os.Hostname()
	want := defaultServeConfig(hostname)
	want.level = slog.LevelInfo
	if cfg.NodeID != hostname || cfg.DataDir != "./arbor-data" || cfg.HTTPAddr != ":8443" ||
		cfg.RaftAddr != ":8300" || cfg.GossipAddr != ":8301" || cfg.BootstrapExpect != 1 ||
		cfg.DefaultReadConsistency != "linearizable" || cfg.DefaultWriteSizeLimit != "medium" ||
		cfg.WriteTimeout != 5*time.Second || cfg.SnapshotThreshold != 8192 || cfg.LogLevel != "info" ||
		cfg.LogFormat != "text" || cfg.RaftTimeout != time.Second || cfg.MaxTokenLifetime != time.Hour || cfg.SnapshotInterval != 30*time.Second || cfg.VoterStabilization != 10*time.Second || cfg.ShutdownTimeout != 10*time.Second ||
		cfg.level != slog.LevelInfo {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestServeConfigFlagsAndEnvironment(t *testing.T) {
	env := map[string]string{
		"ARBOR_NODE_ID":          "from-env",
		"ARBOR_DATA_DIR":         "/env/data",
		"ARBOR_ADMIN_SECRET":     "env,secret",
		"ARBOR_DEV":              "true",
		"ARBOR_WRITE_TIMEOUT":    "7s",
		"ARBOR_LOG_LEVEL":        "debug",
		"ARBOR_SHUTDOWN_TIMEOUT": "3s",
		"ARBOR_MEMORY_LIMIT":     "1Gi",
	}
	cfg, _, err := parse(t, env, "--node-id", "from-flag", "--http-addr", "127.0.0.1:0", "--raft-timeout", "3s")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"node id (flag wins)", cfg.NodeID, "from-flag"},
		{"data dir (env)", cfg.DataDir, "/env/data"},
		{"http addr (flag)", cfg.HTTPAddr, "127.0.0.1:0"},
		{"raft timeout (flag)", cfg.RaftTimeout.String(), "3s"},
		{"admin secret (env, commas kept)", strings.Join(cfg.AdminSecrets, "|"), "env,secret"},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
		}
	}
	if !cfg.Dev || cfg.WriteTimeout != 7*time.Second || cfg.level != slog.LevelDebug || cfg.ShutdownTimeout != 3*time.Second || cfg.memoryLimit != 1<<30 {
		t.Errorf("env values not applied: %+v", cfg)
	}
}

func TestServeConfigRepeatedFlags(t *testing.T) {
	cfg, _, err := parse(t, map[string]string{"ARBOR_ADMIN_SECRET": "ignored"},
		"--admin-secret", "one", "--admin-secret", "two,three")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.AdminSecrets; !slices.Equal(got, []string{"one", "two,three"}) {
		t.Errorf("admin secrets: got %q", got)
	}
	var l commaList
	for _, v := range []string{"a:1, b:2", "", "c:3,"} {
		if err := l.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(l, []string{"a:1", "b:2", "c:3"}) {
		t.Errorf("comma list: got %q", l)
	}
}

func TestServeConfigEnvironmentErrorsAndWarnings(t *testing.T) {
	_, _, err := parse(t, map[string]string{"ARBOR_WRITE_TIMEOUT": "soon"})
	if err == nil || !strings.Contains(err.Error(), "ARBOR_WRITE_TIMEOUT") {
		t.Errorf("bad env value: got %v, want an error naming ARBOR_WRITE_TIMEOUT", err)
	}
	_, warnings, err := parse(t, map[string]string{"ARBOR_NODEID": "typo"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "ARBOR_NODEID") {
		t.Errorf("warnings: got %q, want one about ARBOR_NODEID", warnings)
	}
}

func TestServeConfigHelp(t *testing.T) {
	var out strings.Builder
	lookup, environ := envMap(nil)
	_, _, err := parseServeConfig([]string{"-h"}, lookup, environ, &out)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: got %v, want flag.ErrHelp", err)
	}
	usage := out.String()
	for _, want := range []string{"--node-id", "[$ARBOR_NODE_ID]", "--admin-secret secret", "--log-format format", "(default :8443)"} {
		if !strings.Contains(usage, want) {
			t.Errorf("usage lacks %q:\n%s", want, usage)
		}
	}
	for _, want := range []string{"--raft-timeout duration", "(default 1s)", "--snapshot-interval", "--voter-stabilization"} {
		if !strings.Contains(usage, want) {
			t.Errorf("usage lacks the Raft setting %q", want)
		}
	}
}

func TestServeConfigValidation(t *testing.T) {
	dir := t.TempDir()
	key := make([]byte, 32)
	keyB64 := base64.StdEncoding.EncodeToString(key)
	keyFile := writeTemp(t, dir, "gossip.key", keyB64+"\n")
	shortKeyFile := writeTemp(t, dir, "short.key", base64.StdEncoding.EncodeToString(key[:16]))
	jwtKeyFile := writeTemp(t, dir, "jwt.pem", string(ecdsaPublicKeyPEM(t)))
	certPEM, _, err := pki.NewSelfSigned([]string{"localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	caFile := writeTemp(t, dir, "ca.pem", string(certPEM))
	notPEM := writeTemp(t, dir, "not.pem", "hello")
	pkiDir := filepath.Join(dir, "pki")
	if err := pki.Init(pkiDir, []string{"n1"}, nil, time.Now(), io.Discard); err != nil {
		t.Fatal(err)
	}
	nodeTLS := []string{"--tls-ca", filepath.Join(pkiDir, "ca.pem"), "--tls-cert", filepath.Join(pkiDir, "n1.pem"), "--tls-key", filepath.Join(pkiDir, "n1-key.pem")}
	secure := append(slices.Clone(nodeTLS), "--gossip-key", filepath.Join(pkiDir, "gossip.key"))

	for _, c := range []struct {
		args    []string
		wantErr string // "" means valid
	}{
		{[]string{"--gossip-key", keyB64}, ""},
		{[]string{"--gossip-key", keyFile}, ""},
		{[]string{"--tls-ca", caFile}, "--tls-ca: also give --tls-cert and --tls-key"},
		{nodeTLS, ""},
		{secure, ""},
		{append([]string{"--bootstrap-expect", "3", "--advertise-host", "n1"}, secure...), ""},
		{append([]string{"--join", "a:8301,b:8301", "--reap-after", "1h", "--advertise-host", "n1"}, secure...), ""},
		{[]string{"--tls-ca", caFile, "--tls-cert", filepath.Join(pkiDir, "n1.pem"), "--tls-key", filepath.Join(pkiDir, "n1-key.pem")}, "not signed by --tls-ca"},
		{[]string{"--jwt-public-key", jwtKeyFile}, ""},
		{[]string{"--jwt-public-key", jwtKeyFile, "--jwt-public-key", jwtKeyFile, "--firebase-project", "demo"}, ""},
		{[]string{"--jwt-public-key", notPEM}, "--jwt-public-key"},
		{[]string{"--jwt-public-key", filepath.Join(dir, "missing.pem")}, "--jwt-public-key"},
		{[]string{"--jwt-hs256-secret", "s"}, "--jwt-hs256-secret: must be at least 16 bytes"},
		{[]string{"--jwt-hs256-secret", "0123456789abcdef", "--jwt-audience", "a", "--jwt-issuer", "i"}, ""},
		{[]string{"--jwt-hs256-secret", "0123456789abcdef", "--max-token-lifetime", "24h"}, ""},
		{[]string{"--max-token-lifetime", "0s"}, "--max-token-lifetime 0s: must be positive"},
		{[]string{"--max-token-lifetime", "-1h"}, "--max-token-lifetime"},
		{[]string{"--http-addr", "127.0.0.1:0", "--raft-addr", "[::1]:9000"}, ""},
		{[]string{"--log-level", "WARN", "--log-format", "json"}, ""},
		{[]string{"--advertise-host", "10.0.0.1"}, ""},
		{[]string{"--advertise-host", "::1"}, ""},
		{[]string{"--bootstrap-expect", "3"}, "needs --tls-ca (with --tls-cert and --tls-key) and --gossip-key"},
		{[]string{"--bootstrap-expect", "3", "--insecure-cluster"}, "--advertise-host: a multi-node cluster needs"},
		{[]string{"--bootstrap-expect", "3", "--insecure-cluster", "--raft-addr", "127.0.0.1:8300"}, ""},
		{[]string{"--join", "a:8301,b:8301"}, "--insecure-cluster"},
		{append([]string{"--bootstrap-expect", "3", "--advertise-host", "n1"}, nodeTLS...), "needs --gossip-key"},
		{[]string{"--bootstrap-expect", "3", "--gossip-key", keyB64, "--advertise-host", "n1"}, "needs --tls-ca"},
		{[]string{"--reap-after", "-1s"}, "--reap-after"},
		{[]string{"--bootstrap-expect", "0"}, "--bootstrap-expect 0: must be at least 1"},
		{[]string{"--node-id", ""}, "--node-id"},
		{[]string{"--http-addr", "8443"}, "--http-addr"},
		{[]string{"--raft-addr", "host:99999"}, "--raft-addr"},
		{[]string{"--gossip-addr", "host:http"}, "--gossip-addr"},
		{[]string{"--advertise-host", "node1:8300"}, "--advertise-host"},
		{[]string{"--tls-cert", "c.pem"}, "give both or neither"},
		{[]string{"--tls-key", "k.pem"}, "give both or neither"},
		{[]string{"--tls-ca", notPEM}, "no PEM certificate"},
		{[]string{"--tls-ca", filepath.Join(dir, "missing.pem")}, "--tls-ca"},
		{[]string{"--gossip-key", "c2hvcnQ="}, "the key is 5 bytes, want 32"},
		{[]string{"--gossip-key", shortKeyFile}, "the key is 16 bytes, want 32"},
		{[]string{"--gossip-key", "no such file"}, "neither base64 nor a readable file"},
		{[]string{"--admin-secret", ""}, "--admin-secret: must not be empty"},
		{[]string{"--log-format", "xml"}, "--log-format"},
		{[]string{"--log-level", "loud"}, "--log-level"},
		{[]string{"--raft-timing", "fast"}, "unknown flag --raft-timing"},
		{[]string{"--raft-timeout", "50ms"}, "--raft-timeout 50ms: want 100ms to 1m0s"},
		{[]string{"--raft-timeout", "2m"}, "--raft-timeout"},
		{[]string{"--snapshot-interval", "1ms"}, "--snapshot-interval"},
		{[]string{"--voter-stabilization", "-1s"}, "--voter-stabilization"},
		{[]string{"--write-timeout", "0s"}, "--write-timeout"},
		{[]string{"--shutdown-timeout", "-1s"}, "--shutdown-timeout"},
		{[]string{"--snapshot-threshold", "0"}, "--snapshot-threshold"},
		{[]string{"--memory-limit", "0"}, ""},
		{[]string{"--memory-limit", "512MiB"}, ""},
		{[]string{"--memory-limit", "2Gi"}, ""},
		{[]string{"--memory-limit", "lots"}, `--memory-limit "lots": want a whole number of bytes`},
		{[]string{"--memory-limit", "1.5GiB"}, `--memory-limit "1.5GiB"`},
		{[]string{"--memory-limit", "-1"}, `--memory-limit "-1"`},
		{[]string{"--memory-limit", "1MiB"}, `--memory-limit "1MiB": want 0 (from the container) or at least 64.0MiB`},
		{[]string{"--default-read-consistency", "eventual"}, "eventual"},
		{[]string{"--default-write-size-limit", "huge"}, "huge"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		_, _, err := parse(t, nil, c.args...)
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%q: unexpected error %v", c.args, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%q: got error %v, want one containing %q", c.args, err, c.wantErr)
		}
	}
}

func TestServeConfigCluster(t *testing.T) {
	lone, _, err := parse(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cc := lone.clusterConfig(slog.New(slog.DiscardHandler)); cc.GossipAddr != "" {
		t.Errorf("a lone node without TLS runs gossip on %q", cc.GossipAddr)
	}
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))
	cfg, _, err := parse(t, nil, "--bootstrap-expect", "3", "--insecure-cluster", "--join", "a:8301,b:8301", "--advertise-host", "n1",
		"--gossip-addr", "127.0.0.1:7946", "--gossip-key", key, "--reap-after", "90s", "--trailing-logs", "77")
	if err != nil {
		t.Fatal(err)
	}
	cc := cfg.clusterConfig(slog.New(slog.DiscardHandler))
	if cc.GossipAddr != "127.0.0.1:7946" || !slices.Equal(cc.Join, []string{"a:8301", "b:8301"}) || len(cc.GossipKeys) != 1 || len(cc.GossipKeys[0]) != 32 ||
		cc.ReapAfter != 90*time.Second || cc.TrailingLogs != 77 || !cc.InsecureCluster || cc.BootstrapExpect != 3 {
		t.Errorf("cluster config = %+v", cc)
	}
}

func writeTemp(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func ecdsaPublicKeyPEM(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}
