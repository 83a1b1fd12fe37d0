package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupAndRestore: arbor backup writes the export of the whole
// database (with priorities) to a file; arbor restore puts exactly that
// back after the data was changed, in one atomic write.
func TestBackupAndRestore(t *testing.T) {
	n := StartReadyNode(t, Options{Name: "b"})
	base := []string{"--addr", n.Addr(), "--ca", filepath.Join(n.DataDir, "tls", "cert.pem"), "--auth", AdminSecret}
	wantResponse(t, "seed", n.Do(t, "PUT", "/.json?print=silent",
		`{"users":{"ada":{"name":"Ada","born":1815},"alan":{".value":"Turing",".priority":2}},"n":5.0,"s":"x"}`), 204, "")
	want := n.Do(t, "GET", "/.json?format=export", "")

	out := filepath.Join(t.TempDir(), "backup.json")
	code, msg := Run(t, append([]string{"backup", "--out", out}, base...)...)
	if code != 0 || !strings.Contains(msg, "backup: "+out) {
		t.Fatalf("arbor backup: exit %d\n%s", code, msg)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want.Body {
		t.Fatalf("backup file:\n%s\nwant the export:\n%s", got, want.Body)
	}

	wantResponse(t, "change after the backup", n.Do(t, "PATCH", "/.json?print=silent", `{"users/ada":null,"extra":true}`), 204, "")
	code, msg = Run(t, append([]string{"restore", "--in", out}, base...)...)
	if code != 2 || !strings.Contains(msg, "--yes") {
		t.Fatalf("arbor restore without --yes and no terminal: exit %d\n%s", code, msg)
	}
	if after := n.Do(t, "GET", "/extra.json", ""); after.Body != "true" {
		t.Fatalf("a refused restore changed the data: %q", after.Body)
	}
	code, msg = Run(t, append([]string{"restore", "--in", out, "--yes"}, base...)...)
	if code != 0 || !strings.Contains(msg, "restore: "+out) {
		t.Fatalf("arbor restore: exit %d\n%s", code, msg)
	}
	wantResponse(t, "after the restore", n.Do(t, "GET", "/.json?format=export", ""), 200, want.Body)

	// A backup of an empty database restores to an empty one.
	wantResponse(t, "empty it", n.Do(t, "DELETE", "/.json", ""), 200, "null")
	empty := filepath.Join(t.TempDir(), "empty.json")
	if code, msg := Run(t, append([]string{"backup", "--out", empty}, base...)...); code != 0 {
		t.Fatalf("backup of an empty database: exit %d\n%s", code, msg)
	}
	if b, _ := os.ReadFile(empty); string(b) != "null" {
		t.Fatalf("backup of an empty database: %q", b)
	}
}

// TestRestoreLargerThanOneWrite: a backup three times the node's write
// size limit, with a top-level child and a grandchild each over the
// limit, restores in pieces under the limit, also over a database too
// large to delete in one write, and a new backup is the same file byte
// for byte.
func TestRestoreLargerThanOneWrite(t *testing.T) {
	const limit = 1 << 20 // --default-write-size-limit small
	n := StartReadyNode(t, Options{Name: "big", Args: []string{"--default-write-size-limit", "small"}})
	base := []string{"--addr", n.Addr(), "--ca", filepath.Join(n.DataDir, "tls", "cert.pem"), "--auth", AdminSecret}

	var seed strings.Builder
	seed.WriteString(`{"small":{"a":1,".priority":2},"users":{".priority":"u",`)
	for i := range 3000 {
		fmt.Fprintf(&seed, `"u%05d":{"name":"user \"%d\" é","n":%d,"tags":{"x":true}},`, i, i, i)
	}
	seed.WriteString(`"blobs":{`)
	for i := range 3200 {
		if i > 0 {
			seed.WriteByte(',')
		}
		fmt.Fprintf(&seed, `"b%04d":"%s"`, i, strings.Repeat("z", 1000))
	}
	seed.WriteString(`}},"tail":{".value":"t",".priority":1}}`)
	wantResponse(t, "seed", n.Do(t, "PUT", "/.json?print=silent&writeSizeLimit=unlimited", seed.String()), 204, "")

	first := filepath.Join(t.TempDir(), "first.json")
	if code, msg := Run(t, append([]string{"backup", "--out", first}, base...)...); code != 0 {
		t.Fatalf("arbor backup: exit %d\n%s", code, msg)
	}
	want, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 3*limit {
		t.Fatalf("the backup is %d bytes, want over %d", len(want), 3*limit)
	}
	wantResponse(t, "change", n.Do(t, "PATCH", "/.json?print=silent", `{"users/u00001":null,"extra":true}`), 204, "")

	code, msg := Run(t, append([]string{"restore", "--in", first, "--yes"}, base...)...)
	if code != 0 || !strings.Contains(msg, "pieces (not atomic)") || !strings.Contains(msg, "pieces written") {
		t.Fatalf("arbor restore: exit %d\n%s", code, msg)
	}
	t.Logf("arbor restore:\n%s", msg)
	second := filepath.Join(t.TempDir(), "second.json")
	if code, msg := Run(t, append([]string{"backup", "--out", second}, base...)...); code != 0 {
		t.Fatalf("arbor backup after the restore: exit %d\n%s", code, msg)
	}
	got, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the backup after the restore differs (%d bytes, want %d); restore said:\n%s", len(got), len(want), msg)
	}
}
