package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

// TestPushKeys: 10,000 concurrent POSTs get 10,000 distinct push keys,
// each client's keys increase in the order its writes were acknowledged,
// and the list reads back with exactly those keys, in key order.
func TestPushKeys(t *testing.T) {
	const (
		clients   = 16
		perClient = 625 // clients × perClient = 10,000
		sequent   = 300 // POSTs of the sequential client afterwards
		path      = "/pushkeys/list.json"
	)
	n := StartReadyNode(t, Options{})
	hc := n.PooledClient(t, clients)

	start := time.Now().UnixMilli()
	keys := make([][]string, clients) // per client, in acknowledgement order
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				r, err := n.TryDoWith(hc, AdminSecret, "POST", path, fmt.Sprintf(`{"c":%d,"i":%d}`, c, i))
				if err != nil {
					t.Errorf("client %d, POST %d: %v", c, i, err)
					return
				}
				k, err := pushName(r)
				if err != nil {
					t.Errorf("client %d, POST %d: %v", c, i, err)
					return
				}
				keys[c] = append(keys[c], k)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	concurrentEnd := time.Now().UnixMilli()

	// Keys are distinct, and each client's keys strictly increase.
	owner := map[string][2]int{} // key → {client, i}
	maxKey := ""
	for c, ks := range keys {
		for i, k := range ks {
			if prev, dup := owner[k]; dup {
				t.Fatalf("key %s given to client %d POST %d and to client %d POST %d", k, prev[0], prev[1], c, i)
			}
			owner[k] = [2]int{c, i}
			if i > 0 && k <= ks[i-1] {
				t.Errorf("client %d: key %d %s does not sort after key %d %s", c, i, k, i-1, ks[i-1])
			}
			if ms := pushKeyMillis(k); ms < start || ms > concurrentEnd {
				t.Errorf("key %s carries time %d, outside the test's [%d, %d]", k, ms, start, concurrentEnd)
			}
			maxKey = max(maxKey, k)
		}
	}
	if len(owner) != clients*perClient {
		t.Fatalf("%d distinct keys, want %d", len(owner), clients*perClient)
	}

	// A sequential client's keys strictly increase, after every earlier key.
	prev := maxKey
	for i := range sequent {
		k, err := pushName(n.Do(t, "POST", path, fmt.Sprintf(`{"c":%d,"i":%d}`, clients, i)))
		if err != nil {
			t.Fatalf("sequential POST %d: %v", i, err)
		}
		if k <= prev {
			t.Fatalf("sequential POST %d: key %s does not sort after %s", i, k, prev)
		}
		owner[k] = [2]int{clients, i}
		prev = k
	}

	// The list holds exactly those keys, each with its own value, in key
	// order (push keys are ASCII, so key order is byte order).
	r := n.Do(t, "GET", path, "")
	if r.Status != 200 {
		t.Fatalf("GET %s: %d %.200q", path, r.Status, r.Body)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(r.Body)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("GET %s: not an object (%v, %v)", path, tok, err)
	}
	seen, last := 0, ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		k := tok.(string)
		var v struct{ C, I int }
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("GET %s, key %s: %v", path, k, err)
		}
		want, ok := owner[k]
		switch {
		case !ok:
			t.Errorf("GET %s: key %s was never acknowledged", path, k)
		case want != [2]int{v.C, v.I}:
			t.Errorf("GET %s: key %s holds %+v, want client %d POST %d", path, k, v, want[0], want[1])
		}
		if k <= last {
			t.Errorf("GET %s: key %s comes after %s", path, k, last)
		}
		last = k
		seen++
	}
	if _, err := dec.Token(); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("GET %s: trailing data (%v)", path, err)
	}
	if seen != len(owner) {
		t.Errorf("GET %s: %d keys, want %d", path, seen, len(owner))
	}
	t.Logf("%d concurrent POSTs in %d ms, then %d sequential", clients*perClient, concurrentEnd-start, sequent)
}
