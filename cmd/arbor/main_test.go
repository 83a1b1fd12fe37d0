package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm"
)

func TestRunDispatch(t *testing.T) {
	for _, c := range []struct {
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{nil, exitUsage, "", "Usage:"},
		{[]string{"help"}, exitOK, "serve", ""},
		{[]string{"--help"}, exitOK, "Commands:", ""},
		{[]string{"help", "serve"}, exitOK, "--data-dir", ""},
		{[]string{"version"}, exitOK, "arbor dev\ncommit:          unknown\n", ""},
		{[]string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{[]string{"serve", "--no-such-flag"}, exitUsage, "", "unknown flag --no-such-flag"},
		{[]string{"serve", "--bootstrap-expect", "3"}, exitUsage, "", "needs --tls-ca"},
		{[]string{"status", "extra"}, exitUsage, "", `unexpected argument "extra"`},
		{[]string{"members"}, exitUsage, "", "want a subcommand: list, or remove <id>"},
		{[]string{"members", "remove"}, exitUsage, "", "arbor members remove <id>"},
		{[]string{"certs"}, exitUsage, "", "arbor certs init --dir D --hosts"},
		{[]string{"certs", "init"}, exitUsage, "", "--dir"},
		{[]string{"status", "--addr", "127.0.0.1:1", "--timeout", "1s"}, exitFailure, "", "arbor status: 127.0.0.1:1:"},
	} {
		var stdout, stderr strings.Builder
		code := run(c.args, &stdout, &stderr)
		if code != c.wantCode || !strings.Contains(stdout.String(), c.wantStdout) || !strings.Contains(stderr.String(), c.wantStderr) {
			t.Errorf("arbor %q: exit %d, stdout %q, stderr %q; want exit %d, stdout containing %q, stderr containing %q",
				c.args, code, stdout.String(), stderr.String(), c.wantCode, c.wantStdout, c.wantStderr)
		}
	}
}

func TestBackupAndRestoreFlags(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "bad.json")
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(notJSON, []byte(`{"a":1} trailing`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(good, []byte(`{"a":{"b":1}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args       []string
		wantCode   int
		wantStderr string
	}{
		{[]string{"backup"}, exitUsage, "--out file.json is required"},
		{[]string{"backup", "--out", filepath.Join(dir, "b.json"), "--addr", "127.0.0.1:1", "--timeout", "1s"}, exitFailure, "arbor backup:"},
		{[]string{"restore"}, exitUsage, "--in file.json is required"},
		{[]string{"restore", "--in", filepath.Join(dir, "missing.json")}, exitUsage, "no such file"},
		{[]string{"restore", "--in", notJSON}, exitUsage, "is not a backup"},
		// go test's stdin is not a terminal: nothing is assumed without --yes.
		{[]string{"restore", "--in", good}, exitUsage, "pass --yes"},
		{[]string{"restore", "--in", good, "--yes", "--addr", "127.0.0.1:1", "--timeout", "1s"}, exitFailure, "arbor restore: PUT /:"},
	} {
		var stdout, stderr strings.Builder
		code := run(c.args, &stdout, &stderr)
		if code != c.wantCode || !strings.Contains(stderr.String(), c.wantStderr) {
			t.Errorf("arbor %q: exit %d, stderr %q; want exit %d, stderr containing %q", c.args, code, stderr.String(), c.wantCode, c.wantStderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "b.json")); !os.IsNotExist(err) {
		t.Errorf("a failed backup left its output: %v", err)
	}
}

func TestCheckOneJSONValue(t *testing.T) {
	for in, ok := range map[string]bool{
		`null`: true, `{"a":[1,2,{"b":"c"}]}`: true, ` 5 `: true, `"s"`: true,
		``: false, `{"a":1`: false, `{"a":1}{}`: false, `[1,]`: false, `{"a":1} x`: false,
	} {
		if err := checkOneJSONValue(strings.NewReader(in)); (err == nil) != ok {
			t.Errorf("checkOneJSONValue(%q) = %v, want ok=%v", in, err, ok)
		}
	}
}

func TestVersionNamesFormats(t *testing.T) {
	var out strings.Builder
	printVersion(&out)
	for _, want := range []string{
		fmt.Sprintf("entry format:    %d", fsm.CommandVersion),
		fmt.Sprintf("snapshot format: %d", fsm.SnapshotVersion),
		"go:              go1.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, out.String())
		}
	}
}
