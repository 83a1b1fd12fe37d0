package httpapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// fakeAdmin records removals; removing "alive" fails as the cluster does.
type fakeAdmin struct {
	removed []string
}

func (a *fakeAdmin) Members(context.Context) (any, error) {
	return []map[string]string{{"id": "n1", "health": "alive"}}, nil
}

func (a *fakeAdmin) RemoveMember(_ context.Context, id string) error {
	if id == "alive" {
		return tree.Public(tree.ErrBadRequest, `Member "alive" is alive; stop it before removing it`)
	}
	if id == "noleader" {
		return fmt.Errorf("remove member: %w", fsm.ErrNoLeader)
	}
	a.removed = append(a.removed, id)
	return nil
}

func TestMembersEndpoints(t *testing.T) {
	admin := &fakeAdmin{}
	reg := prometheus.NewRegistry()
	s, err := NewWithAdmin(testConfig(&syncBuffer{}, reg), newFSMDB(), admin)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	do := func(method, path, token string) (int, string) {
		t.Helper()
		r, err := http.NewRequest(method, ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := ts.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	tests := []struct {
		method, path, token string
		status              int
		body                string
	}{
		{"GET", "/members", adminSecret, 200, `[{"health":"alive","id":"n1"}]`},
		{"GET", "/members", "", 401, "Permission denied"},
		{"GET", "/members", "wrong", 401, "Could not parse auth token."},
		{"DELETE", "/members?id=n3", adminSecret, 200, `{"removed":"n3"}`},
		{"DELETE", "/members?id=n3", "", 401, "Permission denied"},
		{"DELETE", "/members", adminSecret, 400, "Missing member id"},
		{"DELETE", "/members?id=alive", adminSecret, 400, "is alive; stop it"},
		{"DELETE", "/members?id=noleader", adminSecret, 503, "Service unavailable: no leader"},
		// The data namespace is untouched.
		{"GET", "/members.json", adminSecret, 200, "null"},
		{"DELETE", "/members/n3.json", adminSecret, 200, "null"},
	}
	for _, tt := range tests {
		status, body := do(tt.method, tt.path, tt.token)
		if status != tt.status || !strings.Contains(body, tt.body) {
			t.Errorf("%s %s: %d %s, want %d containing %q", tt.method, tt.path, status, body, tt.status, tt.body)
		}
	}
	if len(admin.removed) != 1 || admin.removed[0] != "n3" {
		t.Errorf("removed %v", admin.removed)
	}
	if _, err := NewWithAdmin(testConfig(&syncBuffer{}, prometheus.NewRegistry()), newFSMDB(), nil); err == nil {
		t.Error("NewWithAdmin accepted a nil Admin")
	}
}
