package realtime

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// queryObject is a query as the SDKs send it with a tagged listen or a
// get: the index (i: ".key", ".value", a child path; absent for the
// priority), the start (sp, sn, sin) and end (ep, en, ein) with their
// tie-breaker keys and inclusiveness (sin:false is startAfter, ein:false
// endBefore), and the limit (l) from the left or the right (vf).
type queryObject struct {
	I   *string         `json:"i"`
	SP  json.RawMessage `json:"sp"`
	SN  *string         `json:"sn"`
	SIn *bool           `json:"sin"`
	EP  json.RawMessage `json:"ep"`
	EN  *string         `json:"en"`
	EIn *bool           `json:"ein"`
	L   *int            `json:"l"`
	VF  string          `json:"vf"`
}

// errBadQuery is a query object that cannot be read.
func errBadQuery(format string, args ...any) error {
	return tree.Public(tree.ErrBadRequest, "query: "+fmt.Sprintf(format, args...))
}

// parseQueryObject turns a query object into the query the REST API
// would run for the same request (nil for none or an empty one, which
// load the whole location). The SDKs compute their windows the same way,
// so what the server sends is what the client keeps.
func parseQueryObject(raw json.RawMessage) (*tree.Query, error) {
	if isNull(raw) {
		return nil, nil
	}
	var o queryObject
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, errBadQuery("%v", err)
	}
	spec := tree.QuerySpec{Order: tree.OrderByPriority}
	if o.I != nil {
		switch *o.I {
		case ".key":
			spec.Order = tree.OrderByKey
		case ".value":
			spec.Order = tree.OrderByValue
		case ".priority":
		default:
			child, err := tree.SplitPath(*o.I)
			if err != nil || len(child) == 0 {
				return nil, errBadQuery("index %q", *o.I)
			}
			spec.Order, spec.Child = tree.OrderByChild, child
		}
	}
	plain := true // no range and no limit: every child, whatever the order
	if o.SP != nil || o.SN != nil {
		b, err := queryBound(o.SP, o.SN)
		if err != nil {
			return nil, err
		}
		if o.SIn != nil && !*o.SIn {
			spec.StartAfter = b
		} else {
			spec.StartAt = b
		}
		plain = false
	}
	if o.EP != nil || o.EN != nil {
		b, err := queryBound(o.EP, o.EN)
		if err != nil {
			return nil, err
		}
		if o.EIn != nil && !*o.EIn {
			spec.EndBefore = b
		} else {
			spec.EndAt = b
		}
		plain = false
	}
	if o.L != nil {
		if *o.L < 0 {
			return nil, errBadQuery("limit %d", *o.L)
		}
		switch o.VF {
		case "", "l":
		case "r":
			spec.LimitToLast = true
		default:
			return nil, errBadQuery("viewFrom %q", o.VF)
		}
		spec.Limit, spec.HasLimit = *o.L, true
		plain = false
	}
	if plain {
		return nil, nil // the whole location
	}
	return tree.NewQuery(spec)
}

// queryBound reads one end of a range: a leaf value and an optional key.
func queryBound(value json.RawMessage, key *string) (*tree.Bound, error) {
	b := &tree.Bound{}
	if value != nil {
		v, err := tree.ParseBody(value, 1)
		if err != nil {
			return nil, errBadQuery("bound %.40s: %v", value, err)
		}
		if v.Kind() == tree.KindObject || v.HasServerValues() {
			return nil, errBadQuery("bound %.40s is not a leaf", value)
		}
		b.Value = v
	}
	if key != nil {
		b.Key, b.Named = *key, true
	}
	return b, nil
}

// window is what a listen or a get sends of its location: the whole value
// (no query), or the children a query chose.
type window struct {
	value *tree.Node // no query: the location's value
	query bool
	res   tree.QueryResult
	keys  []string              // a query's children, in query order
	nodes map[string]*tree.Node // and their values
	leaf  []byte                // a query's answer when it chose no children
}

// evaluate runs q (nil: none) on v, the value at path in a state whose
// indexes are ixs.
func evaluate(ctx context.Context, path tree.Path, q *tree.Query, v *tree.Node, ixs *fsm.IndexSet) (window, error) {
	if q == nil {
		return window{value: v}, nil
	}
	res, err := q.EvalWith(ctx, v, ixs.Lookup(path, q))
	if err != nil {
		return window{}, err
	}
	w := window{query: true, res: res, nodes: make(map[string]*tree.Node, res.Len())}
	res.Each(func(k string, c *tree.Node) bool {
		w.keys = append(w.keys, k)
		w.nodes[k] = c
		return true
	})
	if len(w.keys) == 0 {
		w.leaf = tree.AppendQueryResult(nil, res, exportJSON)
	}
	return w, nil
}

// exportJSON is how data travels in this protocol: priorities included
// (".priority", and ".value" beside it on a leaf), never as arrays.
var exportJSON = tree.RenderOptions{Export: true}

// render is the window as JSON.
func (w *window) render() []byte {
	if !w.query {
		return tree.AppendJSON(nil, w.value, exportJSON)
	}
	if len(w.keys) == 0 {
		return w.leaf
	}
	return tree.AppendQueryResult(nil, w.res, exportJSON)
}

// hash is the SDKs' hash of the window, as a client holding it computes
// it: a query's view keeps the chosen children and not the location's
// priority.
func (w *window) hash() (string, error) {
	if !w.query {
		return Hash(w.value), nil
	}
	if len(w.keys) == 0 {
		v, err := tree.ParseBody(w.leaf, tree.MaxDepth)
		if err != nil {
			return "", err
		}
		return Hash(v), nil
	}
	b := tree.NewObjectBuilder()
	for _, k := range w.keys {
		b.Set(k, w.nodes[k])
	}
	return Hash(b.Build(nil)), nil
}
