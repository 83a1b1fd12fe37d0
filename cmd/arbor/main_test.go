package main

import (
	"fmt"
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
		{[]string{"serve", "--no-such-flag"}, exitUsage, "", "flag provided but not defined"},
		{[]string{"serve", "--bootstrap-expect", "3"}, exitUsage, "", "needs --tls-ca"},
		{[]string{"status", "extra"}, exitUsage, "", `unexpected argument "extra"`},
		{[]string{"members"}, exitUsage, "", "arbor members list"},
		{[]string{"members", "remove"}, exitUsage, "", "arbor members remove <id>"},
		{[]string{"certs"}, exitUsage, "", "arbor certs init --dir D --hosts"},
		{[]string{"certs", "init", "--dir", "x"}, exitUsage, "", "--hosts"},
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

func TestLaterCommandsAreNotImplementedYet(t *testing.T) {
	for name := range laterCommands {
		var stdout, stderr strings.Builder
		code := run([]string{name, "--addr", "x"}, &stdout, &stderr)
		if want := fmt.Sprintf("arbor %s: not implemented yet\n", name); code != exitUsage || stderr.String() != want {
			t.Errorf("arbor %s: exit %d, stderr %q; want exit 2 and %q", name, code, stderr.String(), want)
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
