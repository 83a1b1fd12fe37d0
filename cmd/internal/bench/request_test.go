package bench

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
)

func TestArborRequests(t *testing.T) {
	b := newArborBuilder("ab\"c") // a quote: the body must stay valid JSON
	for _, c := range []struct {
		op                 operation
		method, path, body string
	}{
		{operation{kind: opWrite, keys: []int{7}}, http.MethodPut, "/bench/k7.json", `"ab\"c"`},
		{operation{kind: opReadLocal, keys: []int{0}}, http.MethodGet, "/bench/k0.json?consistency=local", ""},
		{operation{kind: opReadLinear, keys: []int{42}}, http.MethodGet, "/bench/k42.json?consistency=linearizable", ""},
		{operation{kind: opPush, seq: 3}, http.MethodPost, "/bench/pushes.json", `"ab\"c"`},
		{operation{kind: opPatchMulti, keys: []int{9, 0, 1}}, http.MethodPatch, "/bench.json", `{"k9":"ab\"c","k0":"ab\"c","k1":"ab\"c"}`},
	} {
		r := b.build(c.op, 5)
		if r.method != c.method || r.path != c.path || string(r.body) != c.body {
			t.Errorf("%v: got %s %s %q, want %s %s %q", c.op.kind, r.method, r.path, r.body, c.method, c.path, c.body)
		}
		if r.body != nil && !json.Valid(r.body) {
			t.Errorf("%v: the body %q is not JSON", c.op.kind, r.body)
		}
	}
	if got := b.authorization("s3cret"); got != "Bearer s3cret" {
		t.Errorf("authorization = %q", got)
	}
}

func TestArborRequestBodiesAreFresh(t *testing.T) {
	b := newArborBuilder("v")
	first := b.build(operation{kind: opWrite, keys: []int{1}}, 0)
	first.body[1] = 'X'
	if again := b.build(operation{kind: opWrite, keys: []int{1}}, 0); string(again.body) != `"v"` {
		t.Fatalf("a request body shares memory with the builder: %q", again.body)
	}
}

// etcdPut is a PutRequest as etcd's gateway decodes it.
type etcdPut struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

func decode64(t *testing.T, s string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("not base64: %q", s)
	}
	return string(b)
}

func TestEtcdRequests(t *testing.T) {
	b := newEtcdBuilder("value")
	t.Run("put", func(t *testing.T) {
		r := b.build(operation{kind: opWrite, keys: []int{12}}, 0)
		var p etcdPut
		if err := json.Unmarshal(r.body, &p); err != nil || r.method != http.MethodPost || r.path != "/v3/kv/put" {
			t.Fatalf("got %s %s %s (%v)", r.method, r.path, r.body, err)
		}
		if decode64(t, p.Key) != "bench/k12" || decode64(t, p.Value) != "value" {
			t.Errorf("put %q = %q", decode64(t, p.Key), decode64(t, p.Value))
		}
	})
	for _, c := range []struct {
		kind         opKind
		serializable bool
	}{{opReadLocal, true}, {opReadLinear, false}} {
		t.Run(c.kind.String(), func(t *testing.T) {
			r := b.build(operation{kind: c.kind, keys: []int{3}}, 0)
			var rr struct {
				Key          string `json:"key"`
				Serializable bool   `json:"serializable"`
			}
			if err := json.Unmarshal(r.body, &rr); err != nil || r.path != "/v3/kv/range" {
				t.Fatalf("got %s %s (%v)", r.path, r.body, err)
			}
			if decode64(t, rr.Key) != "bench/k3" || rr.Serializable != c.serializable {
				t.Errorf("range %q serializable=%v, want bench/k3 and %v", decode64(t, rr.Key), rr.Serializable, c.serializable)
			}
		})
	}
	t.Run("push", func(t *testing.T) {
		keys := map[string]bool{}
		for client := range 3 {
			for seq := uint64(1); seq <= 3; seq++ {
				var p etcdPut
				r := b.build(operation{kind: opPush, seq: seq}, client)
				if err := json.Unmarshal(r.body, &p); err != nil || r.path != "/v3/kv/put" {
					t.Fatalf("got %s %s (%v)", r.path, r.body, err)
				}
				keys[decode64(t, p.Key)] = true
			}
		}
		if len(keys) != 9 {
			t.Errorf("9 pushes from 3 clients used %d distinct keys: %v", len(keys), keys)
		}
	})
	t.Run("patch-multi", func(t *testing.T) {
		r := b.build(operation{kind: opPatchMulti, keys: []int{4, 5, 0}}, 0)
		var txn struct {
			Success []struct {
				RequestPut etcdPut `json:"requestPut"`
			} `json:"success"`
		}
		if err := json.Unmarshal(r.body, &txn); err != nil || r.path != "/v3/kv/txn" {
			t.Fatalf("got %s %s (%v)", r.path, r.body, err)
		}
		var got []string
		for _, op := range txn.Success {
			got = append(got, decode64(t, op.RequestPut.Key)+"="+decode64(t, op.RequestPut.Value))
		}
		if want := []string{"bench/k4=value", "bench/k5=value", "bench/k0=value"}; !slices.Equal(got, want) {
			t.Errorf("txn puts %v, want %v", got, want)
		}
	})
	if got := b.authorization("tok"); got != "tok" {
		t.Errorf("authorization = %q, want the bare token", got)
	}
}

func TestOpGenerator(t *testing.T) {
	t.Run("mixed is about one write in ten", func(t *testing.T) {
		g := newOpGenerator("mixed", 100, 1, 0)
		writes := 0
		const n = 20_000
		for range n {
			switch op := g.next(); op.kind {
			case opWrite:
				writes++
			case opReadLinear:
			default:
				t.Fatalf("mixed drew %v", op.kind)
			}
		}
		if share := writes * 100 / n; share < mixedWritePercent-2 || share > mixedWritePercent+2 {
			t.Errorf("mixed wrote %d %% of the time, want about %d %%", share, mixedWritePercent)
		}
	})
	t.Run("keys stay in the key space", func(t *testing.T) {
		for _, w := range []string{"write", "read-local", "read-linearizable", "mixed"} {
			g := newOpGenerator(w, 7, 1, 1)
			seen := map[int]bool{}
			for range 1000 {
				op := g.next()
				if len(op.keys) != 1 || op.keys[0] < 0 || op.keys[0] >= 7 {
					t.Fatalf("%s drew keys %v", w, op.keys)
				}
				seen[op.keys[0]] = true
			}
			if len(seen) != 7 {
				t.Errorf("%s used %d of 7 keys in 1000 draws", w, len(seen))
			}
		}
	})
	t.Run("patch-multi keys are distinct", func(t *testing.T) {
		g := newOpGenerator("patch-multi", 10, 10, 2)
		for range 100 {
			op := g.next()
			sorted := slices.Sorted(slices.Values(op.keys))
			if want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}; op.kind != opPatchMulti || !slices.Equal(sorted, want) {
				t.Fatalf("patch-multi over all 10 keys drew %v", op.keys)
			}
		}
	})
	t.Run("pushes number themselves", func(t *testing.T) {
		g := newOpGenerator("push", 10, 1, 0)
		for want := uint64(1); want <= 5; want++ {
			if op := g.next(); op.kind != opPush || op.seq != want {
				t.Fatalf("push %d: got %v seq %d", want, op.kind, op.seq)
			}
		}
	})
	t.Run("a client's sequence is reproducible", func(t *testing.T) {
		a, b := newOpGenerator("write", 1000, 1, 9), newOpGenerator("write", 1000, 1, 9)
		for range 100 {
			if x, y := a.next().keys[0], b.next().keys[0]; x != y {
				t.Fatalf("the same client drew %d then %d", x, y)
			}
		}
	})
}

func TestBenchValue(t *testing.T) {
	for _, n := range []int{0, 1, 100, 1000} {
		v := benchValue(n)
		if len(v) != n {
			t.Errorf("benchValue(%d) has %d bytes", n, len(v))
		}
		if q, _ := json.Marshal(v); len(q) != n+2 {
			t.Errorf("benchValue(%d) needs escaping in JSON", n)
		}
	}
}

func TestPreloadBatchFitsEtcdRequests(t *testing.T) {
	for _, size := range []int{0, 100, 10_000, benchMaxValue} {
		b := preloadBatch(size)
		if b < 1 || b > benchMaxFields || (b > 1 && b*(size+64) > 1<<20) {
			t.Errorf("preloadBatch(%d) = %d", size, b)
		}
	}
}
