package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNode is a node's write API over a map tree: PUT and PATCH (fields
// are '/'-separated paths) of the root, a 413 for a body over limit and
// a 503 for the first failFirst PATCHes (applied or not, alternately).
type fakeNode struct {
	mu        sync.Mutex
	limit     int
	failFirst int
	root      any
	patches   int
	largest   int
	refused   int
}

func (f *fakeNode) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(b) > f.limit {
		f.refused++
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		fmt.Fprint(w, `{"error":"Error: WRITE_TOO_BIG"}`)
		return
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil || r.URL.Path != "/.json" {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	switch r.Method {
	case http.MethodPut:
		f.root = v
	case http.MethodPatch:
		f.patches++
		f.largest = max(f.largest, len(b))
		fail := f.failFirst > 0
		apply := true
		if fail {
			f.failFirst--
			apply = f.failFirst%2 == 1 // one applied, one not: both answer 503
		}
		if apply {
			for field, val := range v.(map[string]any) {
				f.root = setPath(f.root, strings.Split(field, "/"), val)
			}
		}
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// setPath is root with val at path, creating the objects on the way.
func setPath(root any, path []string, val any) any {
	if len(path) == 0 {
		return val
	}
	m, ok := root.(map[string]any)
	if !ok {
		m = map[string]any{}
	}
	m[path[0]] = setPath(m[path[0]], path[1:], val)
	return m
}

// bigBackup is an export whose "users" child is far over limit bytes and
// whose "users/big" is over it too, with priorities on split nodes, keys
// and strings that need escapes, and small children around them.
func bigBackup(limit int) string {
	var b strings.Builder
	b.WriteString(`{ "a" : {"x":1}, ".priority":3, "users":{".priority":"p",`)
	for i := range limit / 10 {
		fmt.Fprintf(&b, `"u%04d":{"name":"n \"%d\" \\ é","tags":[1,2,{"k":true}]},`, i, i)
	}
	b.WriteString(`"big":{`)
	for i := range limit / 20 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":"%s"`, i, strings.Repeat("v", 30))
	}
	b.WriteString(`}},"z":{".value":"s",".priority":1.5}}` + "\n")
	return b.String()
}

// TestRestoreInPieces: a backup several times the node's write limit,
// with a top-level child over the limit, is written as pieces under the
// limit that merge into exactly the backup, after the node refused the
// first, too large ones; writes answered 503 are sent again.
func TestRestoreInPieces(t *testing.T) {
	const limit = 16 << 10
	backup := bigBackup(limit)
	if len(backup) < 3*limit {
		t.Fatalf("the backup is only %d bytes", len(backup))
	}
	node := &fakeNode{limit: limit, failFirst: 2}
	srv := httptest.NewTLSServer(node)
	defer srv.Close()
	var progress strings.Builder
	rs := &restorer{
		c: &adminClient{base: srv.URL, auth: "s", http: srv.Client()}, r: strings.NewReader(backup),
		total: int64(len(backup)), out: &progress, budget: 1 << 20, backoff: time.Millisecond,
	}
	root, err := trimmed(rs.r, rs.total)
	if err != nil {
		t.Fatal(err)
	}
	how, err := rs.restore(context.Background(), root, false)
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	var want any
	if err := json.Unmarshal([]byte(backup), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(node.root, want) {
		got, _ := json.Marshal(node.root)
		t.Fatalf("the node holds\n%.2000s\nwant\n%.2000s", got, backup)
	}
	if node.largest > limit || node.refused == 0 || node.patches < 3 {
		t.Errorf("largest PATCH %d bytes (limit %d), %d refused, %d PATCHes", node.largest, limit, node.refused, node.patches)
	}
	if !strings.Contains(how, "pieces") || !strings.Contains(progress.String(), "pieces written") ||
		!strings.Contains(progress.String(), "sending it again") {
		t.Errorf("restore %q, progress:\n%s", how, progress.String())
	}

	// --atomic changes nothing when the node refuses one write.
	node.root = "before"
	rs = &restorer{c: rs.c, r: strings.NewReader(backup), total: int64(len(backup)), out: io.Discard, budget: 1 << 20}
	if _, err := rs.restore(context.Background(), root, true); !hasStatus(err, http.StatusRequestEntityTooLarge) || node.root != "before" {
		t.Errorf("atomic restore: %v, node holds %v", err, node.root)
	}
}

// TestRestoreFitsOneWrite: a backup the node takes whole is one PUT.
func TestRestoreFitsOneWrite(t *testing.T) {
	node := &fakeNode{limit: 1 << 20}
	srv := httptest.NewTLSServer(node)
	defer srv.Close()
	backup := ` {"a":{"b":[1,2]},".priority":1} `
	rs := &restorer{c: &adminClient{base: srv.URL, http: srv.Client()}, r: strings.NewReader(backup), total: int64(len(backup)), out: io.Discard, budget: 1 << 20}
	root, err := trimmed(rs.r, rs.total)
	if err != nil {
		t.Fatal(err)
	}
	how, err := rs.restore(context.Background(), root, true)
	if err != nil || how != "in one atomic write" || node.patches != 0 {
		t.Fatalf("restore: %q, %v, %d PATCHes", how, err, node.patches)
	}
	var want any
	_ = json.Unmarshal([]byte(backup), &want)
	if !reflect.DeepEqual(node.root, want) {
		t.Errorf("the node holds %v", node.root)
	}
}

// TestRestoreValueTooLarge: a string larger than any write the node
// takes cannot be split; the restore says which value.
func TestRestoreValueTooLarge(t *testing.T) {
	node := &fakeNode{limit: 8 << 10}
	srv := httptest.NewTLSServer(node)
	defer srv.Close()
	backup := `{"ok":1,"huge":{"s":"` + strings.Repeat("x", 20<<10) + `"}}`
	rs := &restorer{c: &adminClient{base: srv.URL, http: srv.Client()}, r: strings.NewReader(backup), total: int64(len(backup)), out: io.Discard, budget: 1 << 20}
	root, _ := trimmed(rs.r, rs.total)
	_, err := rs.restore(context.Background(), root, false)
	if !errors.Is(err, errTooLargeForOne) || !strings.Contains(err.Error(), "/huge/s") {
		t.Fatalf("restore: %v", err)
	}
}
