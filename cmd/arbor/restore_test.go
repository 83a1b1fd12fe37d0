package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestRestoreInParts: a backup too large for one write is sent as a delete
// of the root, then PATCHes of whole top-level children in batches, then
// the root's priority; merged, the PATCHes are the backup.
func TestRestoreInParts(t *testing.T) {
	type call struct{ method, path, body string }
	var (
		mu    sync.Mutex
		calls []call
	)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, call{r.Method, r.URL.String(), string(b)})
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	c := &adminClient{base: srv.URL, auth: "s", http: srv.Client()}

	backup := `{"a":{"x":1},"b":"` + strings.Repeat("y", 40) + `",".priority":3,"c":[1,2],"d":null}`
	var progress strings.Builder
	if err := restoreInParts(context.Background(), c, strings.NewReader(backup), 30, &progress); err != nil {
		t.Fatal(err)
	}
	if len(calls) < 4 {
		t.Fatalf("calls: %+v", calls)
	}
	if calls[0] != (call{"PUT", "/.json?writeSizeLimit=unlimited&print=silent", "null"}) {
		t.Errorf("first call %+v, want the root deleted", calls[0])
	}
	last := calls[len(calls)-1]
	if last.method != "PUT" || !strings.HasPrefix(last.path, "/.priority/.json?") || last.body != "3" {
		t.Errorf("last call %+v, want the root's priority", last)
	}
	merged := map[string]json.RawMessage{}
	for _, cl := range calls[1 : len(calls)-1] {
		if cl.method != "PATCH" || !strings.HasPrefix(cl.path, "/.json?") {
			t.Errorf("call %+v, want a PATCH of the root", cl)
		}
		var part map[string]json.RawMessage
		if err := json.Unmarshal([]byte(cl.body), &part); err != nil {
			t.Fatalf("PATCH body %q: %v", cl.body, err)
		}
		for k, v := range part {
			merged[k] = v
		}
	}
	var want map[string]json.RawMessage
	_ = json.Unmarshal([]byte(backup), &want)
	delete(want, ".priority")
	gotJSON, _ := json.Marshal(merged)
	wantJSON, _ := json.Marshal(want)
	if string(gotJSON) != string(wantJSON) {
		t.Errorf("merged PATCHes %s, want %s", gotJSON, wantJSON)
	}
	if !strings.Contains(progress.String(), "top-level children") {
		t.Errorf("no progress shown: %q", progress.String())
	}

	if err := restoreInParts(context.Background(), c, strings.NewReader(`[1,2]`), 30, io.Discard); err == nil {
		t.Error("a large backup that is not an object was accepted")
	}
}
