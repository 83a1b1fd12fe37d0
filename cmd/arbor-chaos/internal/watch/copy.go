package watch

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"github.com/arbordb/arbor/cmd/internal/history"
	"github.com/arbordb/arbor/cmd/internal/workload"
)

// replica is a watcher's copy of the tree and the changes it recorded.
type replica struct {
	tree Tree
	keys map[string][]Obs
}

// apply applies a put or patch at index and records, per key, the
// change of its value; rebase marks a put at "/".
func (r *replica) apply(event string, c Change, index uint64, rebase bool) {
	type put struct {
		path  []string
		value any
	}
	var puts []put
	if event == EventPut {
		puts = []put{{c.Path, c.Value}}
	} else {
		for _, f := range c.Fields {
			puts = append(puts, put{append(slices.Clip(c.Path), f.Path...), f.Value})
		}
	}
	affected := map[string]bool{}
	for _, p := range puts {
		// A leaf on the way down is replaced by the put: its key changes.
		for i := range min(len(p.path), keyDepth) {
			if x := r.tree.Get(p.path[:i]); x != nil && !isMap(x) {
				affected[keyOf(p.path[:i])] = true
			}
		}
		if len(p.path) >= keyDepth {
			affected[keyOf(p.path)] = true
			continue
		}
		keysUnder(r.tree.Get(p.path), p.path, affected)
		keysUnder(p.value, p.path, affected)
	}
	before := make(map[string]any, len(affected))
	for k := range affected {
		before[k] = clone(r.tree.Get(splitKey(k)))
	}
	for _, p := range puts {
		r.tree.Put(p.path, p.value)
	}
	if r.keys == nil {
		r.keys = map[string][]Obs{}
	}
	for k := range affected {
		after := r.tree.Get(splitKey(k))
		if reflect.DeepEqual(before[k], after) {
			continue
		}
		o := Obs{Index: index, Rebase: rebase}
		if kind, ok := workload.KindOf(k); ok && kind == history.List && strings.Count(k, "/") == keyDepth-1 {
			o.Added, o.Removed = listDiff(before[k], after)
			if after != nil && !isMap(after) {
				o.Value = jsonText(after)
			}
		} else {
			o.Value = jsonText(after)
		}
		r.keys[k] = append(r.keys[k], o)
	}
}

// listDiff returns the children of after that before lacks, and those of
// before that after lacks or holds with another value; both sorted by
// name.
func listDiff(before, after any) (added, removed []history.Item) {
	b, _ := before.(map[string]any)
	a, _ := after.(map[string]any)
	for name, v := range a {
		if old, ok := b[name]; !ok {
			added = append(added, history.Item{Name: name, Value: itemText(v)})
		} else if !reflect.DeepEqual(old, v) {
			added = append(added, history.Item{Name: name, Value: itemText(v)})
			removed = append(removed, history.Item{Name: name, Value: itemText(old)})
		}
	}
	for name, v := range b {
		if _, ok := a[name]; !ok {
			removed = append(removed, history.Item{Name: name, Value: itemText(v)})
		}
	}
	byName := func(x, y history.Item) int { return strings.Compare(x.Name, y.Name) }
	slices.SortFunc(added, byName)
	slices.SortFunc(removed, byName)
	return added, removed
}

// itemText is a list child's value: the string itself, or the JSON text
// of anything else (which no append wrote).
func itemText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return jsonText(v)
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func isMap(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}
