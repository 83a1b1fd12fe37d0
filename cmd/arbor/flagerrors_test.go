package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// badServeValues holds, for each serve flag that can be given a wrong
// value, values it must refuse.
var badServeValues = map[string][]string{
	"node-id":                  {""},
	"data-dir":                 {""},
	"http-addr":                {"nope", "127.0.0.1:99999"},
	"raft-addr":                {"nope"},
	"gossip-addr":              {"nope"},
	"advertise-host":           {"10.0.0.1:8300"},
	"bootstrap-expect":         {"0", "three"},
	"tls-cert":                 {"/nonexistent/cert.pem"},
	"tls-key":                  {"/nonexistent/key.pem"},
	"tls-ca":                   {"/nonexistent/ca.pem"},
	"gossip-key":               {"short"},
	"insecure-cluster":         {"maybe"},
	"admin-secret":             {""},
	"jwt-hs256-secret":         {"short"},
	"jwt-public-key":           {"/nonexistent/keys.pem"},
	"strict-indexes":           {"maybe"},
	"dev":                      {"maybe"},
	"default-read-consistency": {"eventual"},
	"default-write-size-limit": {"huge"},
	"write-timeout":            {"abc", "0s", "5"},
	"max-token-lifetime":       {"forever", "0s", "-1h"},
	"database-name":            {"My DB", "-x", "a.b"},
	"snapshot-threshold":       {"0", "many", "-1"},
	"trailing-logs":            {"x"},
	"reap-after":               {"-1s", "soon"},
	"log-level":                {"loud"},
	"log-format":               {"xml"},
	"raft-timeout":             {"1ms", "fast"},
	"snapshot-interval":        {"1ms", "often"},
	"voter-stabilization":      {"-1s", "x"},
	"shutdown-timeout":         {"0s", "x"},
	"stream-keepalive":         {"0s", "x"},
	"memory-limit":             {"lots", "1MiB"},
	"max-writes-in-progress":   {"0", "x"},
	"max-connections":          {"-1", "99999999999999999999"},
}

// freeFormServeFlags take any value, so there is nothing to refuse.
var freeFormServeFlags = map[string]bool{
	"join":             true, // names re-resolved until joined; a typo shows as a failed join
	"jwt-audience":     true,
	"jwt-issuer":       true,
	"firebase-project": true,
}

// TestServeFlagErrorsNameTheFlag: every serve flag given a wrong value,
// on the command line or in its environment variable, is refused with a
// message that names it, on one line.
func TestServeFlagErrorsNameTheFlag(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := defaultServeConfig("h")
	cfg.bindFlags(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := badServeValues[f.Name]; !ok && !freeFormServeFlags[f.Name] {
			t.Errorf("--%s has no bad values in badServeValues (or add it to freeFormServeFlags)", f.Name)
		}
	})
	for name, values := range badServeValues {
		if fs.Lookup(name) == nil {
			t.Errorf("badServeValues names --%s, which serve does not have", name)
			continue
		}
		for _, v := range values {
			_, _, err := parse(t, nil, "--"+name+"="+v)
			checkFlagError(t, "--"+name+"="+v, err, "--"+name)
			if v == "" {
				continue // an empty variable is indistinguishable from none for some flags
			}
			_, _, err = parse(t, map[string]string{envName(name): v})
			checkFlagError(t, envName(name)+"="+v, err, "--"+name)
		}
	}
}

func checkFlagError(t *testing.T, given string, err error, want string) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s: accepted", given)
	case !strings.Contains(err.Error(), want):
		t.Errorf("%s: error %q does not name %s", given, err, want)
	case strings.Contains(err.Error(), "\n"):
		t.Errorf("%s: error %q is more than one line", given, err)
	case strings.Contains(err.Error(), "parse error"):
		t.Errorf("%s: error %q does not say what the flag wants", given, err)
	}
}

// TestUsageMistakesAreOneLine: an unknown flag, command or subcommand, or
// a bad value, prints one line that says what is wrong and where -h is,
// never the whole usage; -h still prints it.
func TestUsageMistakesAreOneLine(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"frob"}, `unknown command "frob"`},
		{[]string{"serve", "--frob"}, "unknown flag --frob"},
		{[]string{"serve", "--write-timeout=abc"}, `--write-timeout "abc": want a duration`},
		{[]string{"serve", "--default-write-size-limit", "huge"}, `--default-write-size-limit "huge": want tiny`},
		{[]string{"serve", "--raft-addr"}, "--raft-addr needs a value"},
		{[]string{"members", "frob"}, `unknown subcommand "frob"`},
		{[]string{"members"}, "want a subcommand"},
		{[]string{"members", "list", "--frob"}, "unknown flag --frob"},
		{[]string{"status", "--timeout", "soon"}, `--timeout "soon": want a duration`},
		{[]string{"status", "extra"}, `unexpected argument "extra"`},
		{[]string{"certs", "frob"}, `unknown command "frob"`},
		{[]string{"certs", "init"}, "--dir is required"},
		{[]string{"certs", "init", "--frob"}, "unknown flag --frob"},
		{[]string{"backup", "--frob"}, "unknown flag --frob"},
		{[]string{"bench", "--clients", "many"}, `--clients "many": want a whole number`},
		{[]string{"recover", "--frob"}, "unknown flag --frob"},
		{[]string{"token", "--frob"}, "unknown flag --frob"},
		{[]string{"token", "--uid", "alice", "--claims", "[1]", "--jwt-hs256-secret", "0123456789abcdef"}, `--claims "[1]": want a JSON object`},
	} {
		var stdout, stderr strings.Builder
		code := run(c.args, &stdout, &stderr)
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if code != exitUsage || len(lines) != 1 || !strings.Contains(lines[0], c.want) || !strings.Contains(lines[0], "-h") && !strings.Contains(lines[0], "help") {
			t.Errorf("arbor %q: exit %d, stderr %q; want exit %d and one line with %q and a pointer to -h", c.args, code, stderr.String(), exitUsage, c.want)
		}
	}
	var stdout, stderr strings.Builder
	if code := run([]string{"status", "-h"}, &stdout, &stderr); code != exitOK || !strings.Contains(stderr.String(), "--addr") {
		t.Errorf("arbor status -h: exit %d, stderr %q; want the usage", code, stderr.String())
	}
}

// TestServeHelpNamesArgumentTypes: the flags' values are unwrapped after
// parsing, so -h still names each argument by its type.
func TestServeHelpNamesArgumentTypes(t *testing.T) {
	var out strings.Builder
	lookup, environ := envMap(nil)
	if _, _, err := parseServeConfig([]string{"-h"}, lookup, environ, &out); err != flag.ErrHelp {
		t.Fatalf("-h: %v", err)
	}
	for _, want := range []string{"--write-timeout duration", "--snapshot-threshold entries", "--max-connections int"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("serve -h lacks %q", want)
		}
	}
	if _, _, err := parseServeConfig([]string{"--dev"}, lookup, environ, io.Discard); err != nil {
		t.Errorf("--dev without a value: %v", err)
	}
}
