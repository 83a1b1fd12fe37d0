package watch

import (
	"slices"
	"testing"

	"github.com/arbordb/arbor/cmd/internal/history"
)

// feed applies frames (event, data) at increasing indexes from 1.
func feed(t *testing.T, r *replica, frames ...[2]string) {
	t.Helper()
	for i, f := range frames {
		c, err := ParseChange(f[0], []byte(f[1]))
		if err != nil {
			t.Fatal(err)
		}
		root := f[0] == EventPut && len(c.Path) == 0
		r.apply(f[0], c, uint64(i+1), root)
	}
}

func TestReplicaRecordsChangesPerKey(t *testing.T) {
	var r replica
	feed(t, &r,
		[2]string{EventPut, `{"path":"/","data":{"reg":{"g0":{"k0":"a"}}}}`},
		[2]string{EventPatch, `{"path":"/reg/g0","data":{"k0":"b","k1":"c"}}`},
		[2]string{EventPut, `{"path":"/reg/g0/k0","data":null}`},
		[2]string{EventPut, `{"path":"/list/g0/k0/-A","data":"x"}`},
		[2]string{EventPut, `{"path":"/list/g0/k0/-B","data":"y"}`},
		[2]string{EventPut, `{"path":"/ctr/s0/n0","data":1}`},
		[2]string{EventPut, `{"path":"/reg/g0/k1","data":"c"}`}, // no change: nothing recorded
		[2]string{EventPut, `{"path":"/","data":{"ctr":{"s0":{"n0":3}},"list":{"g0":{"k0":{"-A":"x","-B":"y","-C":"z"}}}}}`},
	)
	want := map[string][]Obs{
		"reg/g0/k0": {{Index: 1, Rebase: true, Value: `"a"`}, {Index: 2, Value: `"b"`}, {Index: 3, Value: "null"}},
		"reg/g0/k1": {{Index: 2, Value: `"c"`}, {Index: 8, Rebase: true, Value: "null"}},
		"list/g0/k0": {
			{Index: 4, Added: []history.Item{{Name: "-A", Value: "x"}}},
			{Index: 5, Added: []history.Item{{Name: "-B", Value: "y"}}},
			{Index: 8, Rebase: true, Added: []history.Item{{Name: "-C", Value: "z"}}},
		},
		"ctr/s0/n0": {{Index: 6, Value: "1"}, {Index: 8, Rebase: true, Value: "3"}},
	}
	for k, w := range want {
		if got := r.keys[k]; !slices.EqualFunc(got, w, eqObs) {
			t.Errorf("%s:\n got %+v\nwant %+v", k, got, w)
		}
	}
	if len(r.keys) != len(want) {
		t.Errorf("keys %v", r.keys)
	}
	if got := string(r.tree.JSON()); got != `{"ctr":{"s0":{"n0":3}},"list":{"g0":{"k0":{"-A":"x","-B":"y","-C":"z"}}}}` {
		t.Errorf("copy %s", got)
	}
}

func eqObs(a, b Obs) bool {
	return a.Index == b.Index && a.Rebase == b.Rebase && a.Value == b.Value &&
		slices.Equal(a.Added, b.Added) && slices.Equal(a.Removed, b.Removed)
}

func TestTreePutPrunesAndReplacesLeaves(t *testing.T) {
	var tr Tree
	tr.Put([]string{"a", "b"}, "x")
	tr.Put([]string{"a", "b", "c"}, "y") // below a leaf: the leaf becomes an object
	if got := string(tr.JSON()); got != `{"a":{"b":{"c":"y"}}}` {
		t.Errorf("%s", got)
	}
	tr.Put([]string{"a", "b", "c"}, nil)
	if got := string(tr.JSON()); got != "null" {
		t.Errorf("empty parents stay: %s", got)
	}
	b, err := Canonical([]byte(`{"z":1,"a":{"y":null,"x":{}}}`))
	if err != nil || string(b) != `{"z":1}` {
		t.Errorf("canonical %s %v", b, err)
	}
}
