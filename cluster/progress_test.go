package cluster

import (
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestProgressRoundTrip: opProgress's reply carries each member's figures
// exactly, the absent ones absent; every truncation of it is refused.
func TestProgressRoundTrip(t *testing.T) {
	applied, lag, contact := uint64(42), uint64(3), int64(250)
	view := map[raft.ServerID]Progress{
		"n1": {AppliedIndex: &applied, Lag: &lag},
		"n2": {AppliedIndex: &applied, Lag: &lag, LastContactMS: &contact},
		"n3": {LastContactMS: &contact, Stale: true},
		"n4": {Stale: true},
	}
	reply := encodeProgress(view)
	got, err := decodeProgress(reply)
	if err != nil || !reflect.DeepEqual(got, view) {
		t.Fatalf("decode = %+v, %v; want %+v", got, err, view)
	}
	for i := range len(reply) {
		if _, err := decodeProgress(reply[:i]); err == nil {
			t.Errorf("truncated to %d bytes: no error", i)
		}
	}
	if _, err := decodeProgress(encodeError(errRetry)); err == nil {
		t.Error("a retry reply decoded as a view")
	}
}

// TestProgressBookView: the leader's record turns a member stale when it
// has not answered for staleAfter, or never has, that long into the term.
func TestProgressBookView(t *testing.T) {
	var b progressBook
	start := time.Unix(1000, 0)
	b.lead(7, start)
	servers := []raft.Server{{ID: "n1"}, {ID: "n2"}, {ID: "n3"}}
	if !b.begin("n2") || b.begin("n2") {
		t.Fatal("begin: a second probe of n2 while one runs")
	}
	b.end(7, "n2", heard{applied: 9, lag: 1, known: true, at: start.Add(time.Second)}, true)
	self := heard{applied: 10, known: true}
	const staleAfter = 3 * time.Second

	v := b.view(servers, "n1", self, start.Add(2*time.Second), staleAfter)
	if p := v["n1"]; *p.AppliedIndex != 10 || *p.Lag != 0 || p.LastContactMS != nil || p.Stale {
		t.Errorf("leader: %+v", p)
	}
	if p := v["n2"]; *p.AppliedIndex != 9 || *p.Lag != 1 || *p.LastContactMS != 1000 || p.Stale {
		t.Errorf("n2 heard a second ago: %+v", p)
	}
	if p := v["n3"]; p.AppliedIndex != nil || p.LastContactMS != nil || p.Stale {
		t.Errorf("n3 not heard yet, early in the term: %+v", p)
	}
	v = b.view(servers, "n1", self, start.Add(5*time.Second), staleAfter)
	if !v["n2"].Stale || !v["n3"].Stale || v["n1"].Stale {
		t.Errorf("after 5 s: %+v", v)
	}
	// An answer from an earlier term is dropped; a new term starts afresh.
	b.lead(8, start.Add(6*time.Second))
	b.end(7, "n3", heard{at: start.Add(6 * time.Second)}, true)
	if v := b.view(servers, "n1", self, start.Add(6*time.Second), staleAfter); v["n2"].LastContactMS != nil || v["n3"].LastContactMS != nil {
		t.Errorf("new term: %+v", v)
	}
}
