package testcluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// fakeNodes answers requests from a table: node → path → response.
type fakeNodes map[string]map[string]client.Response

func (f fakeNodes) Do(_ context.Context, node, method, path, body string, headers ...string) (client.Response, error) {
	r, ok := f[node][path]
	if !ok {
		return client.Response{}, errors.New("connection refused")
	}
	return r, nil
}

func TestGetStatusAndCheckReady(t *testing.T) {
	f := fakeNodes{
		"n1": {
			"/status": {Status: 200, Body: []byte(`{"node_id":"n1","role":"leader","leader":"n1","ready":true,"members":[{"id":"n1","versions":{"entry_format":3,"release":"1.2"}}],"last_snapshot":{"index":7}}`)},
			"/readyz": {Status: 200},
		},
		"n2": {
			"/status": {Status: 503, Body: []byte("no leader\n")},
			"/readyz": {Status: 503, Body: []byte("not ready\n")},
		},
		"n3": {"/status": {Status: 200, Body: []byte(`{`)}},
	}
	ctx := context.Background()
	st, err := GetStatus(ctx, f, "n1")
	if err != nil || st.Role != "leader" || !st.Ready || st.LastSnapshot.Index != 7 || st.Members[0].Versions.EntryFormat != 3 || st.Members[0].Versions.Release != "1.2" {
		t.Errorf("n1: %+v %v", st, err)
	}
	if _, err := GetStatus(ctx, f, "n2"); err == nil || !strings.Contains(err.Error(), "503 no leader") {
		t.Errorf("n2: %v", err)
	}
	if _, err := GetStatus(ctx, f, "n3"); err == nil {
		t.Error("n3: a broken body accepted")
	}
	if err := CheckReady(ctx, f, "n1"); err != nil {
		t.Errorf("n1 not ready: %v", err)
	}
	for _, node := range []string{"n2", "n3"} {
		if err := CheckReady(ctx, f, node); err == nil {
			t.Errorf("%s ready", node)
		}
	}
}

func TestOneLeader(t *testing.T) {
	nodes := []string{"n1", "n2"}
	for _, tc := range []struct {
		sts  map[string]Status
		want string // the leader, or a part of the error
	}{
		{map[string]Status{"n1": {Ready: true, Leader: "n2"}, "n2": {Ready: true, Leader: "n2"}}, "n2"},
		{map[string]Status{"n1": {Ready: true, Leader: "n2"}, "n2": {Health: "catching up"}}, "n2 not ready: catching up"},
		{map[string]Status{"n1": {Ready: true}, "n2": {Ready: true}}, "n1 knows no leader"},
		{map[string]Status{"n1": {Ready: true, Leader: "n1"}, "n2": {Ready: true, Leader: "n2"}}, "n2 says the leader is n2, another node n1"},
		{map[string]Status{"n1": {Ready: true, Leader: "n1"}}, "no status of n2"},
	} {
		leader, err := OneLeader(nodes, func(node string) (Status, error) {
			st, ok := tc.sts[node]
			if !ok {
				return st, errors.New("no status of " + node)
			}
			return st, nil
		})
		if got := leader + errString(err); !strings.Contains(got, tc.want) {
			t.Errorf("%v: got %q, want %q", tc.sts, got, tc.want)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestPoll: nil once cond holds; else its last complaint after timeout.
func TestPoll(t *testing.T) {
	calls := 0
	err := Poll(context.Background(), 10*time.Second, time.Millisecond, func(context.Context) error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("Poll: %v after %d calls", err, calls)
	}
	calls = 0
	err = Poll(context.Background(), 50*time.Millisecond, time.Millisecond, func(ctx context.Context) error {
		calls++
		return errors.New("still " + strings.Repeat("x", calls%2))
	})
	if err == nil || !strings.HasPrefix(err.Error(), "still") {
		t.Errorf("Poll after its timeout: %v", err)
	}
}

func TestSleep(t *testing.T) {
	if !Sleep(context.Background(), time.Millisecond) {
		t.Error("Sleep did not sleep")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep outlived its context")
	}
}
