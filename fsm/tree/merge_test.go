package tree

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// diffNodes describes the first difference between a and b, down to what
// ETags do not show: sizes (write limits depend on them, and so does the
// binary form), and the B-trees' key order.
func diffNodes(a, b *Node, at string) string {
	if a == nil || b == nil {
		if a != b {
			return fmt.Sprintf("%s: %s vs %s", at, render(a), render(b))
		}
		return ""
	}
	if a.kind != b.kind || a.b != b.b || a.i != b.i || a.s != b.s {
		return fmt.Sprintf("%s: leaf %s vs %s", at, renderExport(a), renderExport(b))
	}
	if a.Size() != b.Size() {
		return fmt.Sprintf("%s: size %d vs %d", at, a.Size(), b.Size())
	}
	if a.hash() != b.hash() {
		return fmt.Sprintf("%s: hash differs: %s vs %s", at, renderExport(a), renderExport(b))
	}
	if d := diffNodes(a.prio, b.prio, at+"/.priority"); d != "" {
		return d
	}
	if a.kind != KindObject {
		return ""
	}
	if a.Len() != b.Len() {
		return fmt.Sprintf("%s: %d vs %d children", at, a.Len(), b.Len())
	}
	if a.sumLanes() != b.sumLanes() {
		return at + ": lane sums differ"
	}
	ea, eb := a.obj.children.Items(), b.obj.children.Items()
	for i := range ea {
		if ea[i].key != eb[i].key {
			return fmt.Sprintf("%s: child %d is %q vs %q", at, i, ea[i].key, eb[i].key)
		}
		if d := diffNodes(ea[i].node, eb[i].node, at+"/"+ea[i].key); d != "" {
			return d
		}
	}
	// Every key is found where the order puts it.
	for _, e := range eb {
		if b.Child(e.key) != e.node {
			return fmt.Sprintf("%s: child %q not found by key", at, e.key)
		}
	}
	return ""
}

// renderExport is n's export JSON (priorities shown).
func renderExport(n *Node) string { return string(AppendJSON(nil, n, RenderOptions{Export: true})) }

// update is a PATCH for the tests: where and how it is written, and its
// body as text (parsed as the write's entry format would: with the
// increment check when parsed by the proposer) or as fields.
type update struct {
	w      Write
	body   string
	fields []Field
}

// parse returns u's fields, parsing its body when it has one.
func (u *update) parse() ([]Field, error) {
	if u.body == "" {
		return u.fields, nil
	}
	return ParseUpdate([]byte(u.body), MaxDepth-len(u.w.Path))
}

// diffUpdate applies u to root with UpdateInOrder, the definition of an
// Update (the fields set one after the other, each from the root), and
// with Update, and describes the first difference in tree, echo, fields
// or error: the one-pass merge must match the reference exactly.
func diffUpdate(root *Node, u update) string {
	fields, err := u.parse()
	if err != nil || fields == nil {
		return ""
	}
	before := renderExport(root)
	ra, fa, ea, erra := UpdateInOrder(root, u.w, fields)
	rb, fb, eb, errb := Update(root, u.w, fields)
	if renderExport(root) != before {
		return "the tree before the update changed"
	}
	if fmt.Sprint(erra) != fmt.Sprint(errb) || fmt.Sprintf("%T", erra) != fmt.Sprintf("%T", errb) {
		return fmt.Sprintf("errors: %v vs %v", erra, errb)
	}
	if erra != nil {
		return ""
	}
	if d := diffNodes(ra, rb, "tree"); d != "" {
		return d
	}
	if d := diffNodes(ea, eb, "echo"); d != "" {
		return d
	}
	if d := diffFields(fa, fb); d != "" {
		return d
	}
	return ""
}

func diffFields(a, b []Field) string {
	if len(a) != len(b) || (a == nil) != (b == nil) {
		return fmt.Sprintf("fields: %d vs %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Path.String() != b[i].Path.String() {
			return fmt.Sprintf("field %d: path %s vs %s", i, a[i].Path, b[i].Path)
		}
		if d := diffNodes(a[i].Value, b[i].Value, "field "+a[i].Path.String()); d != "" {
			return d
		}
	}
	return ""
}

// mergeGen makes random trees and PATCHes over a few keys, so that
// fields share parents, delete whole objects and recreate them, set
// priorities before and after, and go through leaves.
type mergeGen struct {
	r    *rand.Rand
	keys []string
}

func newMergeGen(seed int64) *mergeGen {
	return &mergeGen{
		r: rand.New(rand.NewSource(seed)),
		// Integer keys order before the others; U+E000 and an emoji order
		// differently in UTF-16 than in UTF-8.
		keys: []string{"a", "b", "c", "1", "10", "-2", "007", "\ue000", "😀"},
	}
}

func (g *mergeGen) key() string { return g.keys[g.r.Intn(len(g.keys))] }

func (g *mergeGen) str(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
	return b.String()
}

func (g *mergeGen) prio() string {
	switch g.r.Intn(6) {
	case 0:
		return "null"
	case 1:
		return `{".sv":"timestamp"}`
	case 2:
		return fmt.Sprintf("%d.5", g.r.Intn(3))
	case 3:
		return g.str("p" + fmt.Sprint(g.r.Intn(3)))
	}
	return fmt.Sprint(g.r.Intn(3))
}

// value is a random JSON value at most depth levels deep.
func (g *mergeGen) value(depth int, sv bool) string {
	n := 9
	if sv {
		n = 12
	}
	switch k := g.r.Intn(n); {
	case k == 0:
		return "null"
	case k == 1:
		return fmt.Sprint(g.r.Intn(5))
	case k == 2:
		return []string{"1.5", "-0.25", "1e308", "9223372036854775807"}[g.r.Intn(4)]
	case k == 3:
		return g.str("s" + fmt.Sprint(g.r.Intn(3)))
	case k == 4:
		return []string{"true", "false", "{}", "[]"}[g.r.Intn(4)]
	case k == 5:
		return `{".value":` + g.value(0, sv) + `,".priority":` + g.prio() + `}`
	case k <= 8 && depth > 0:
		var b strings.Builder
		b.WriteByte('{')
		for i := g.r.Intn(4); i >= 0; i-- {
			fmt.Fprintf(&b, "%s:%s,", g.str(g.key()), g.value(depth-1, sv))
		}
		if g.r.Intn(3) == 0 {
			b.WriteString(`".priority":` + g.prio() + ",")
		}
		b.WriteString(`"` + g.key() + `":1}`)
		return b.String()
	case k == 9:
		return `{".sv":"timestamp"}`
	case k >= 10:
		return `{".sv":{"increment":` + []string{"1", "-3", "0.5", "1e308", "9223372036854775807"}[g.r.Intn(5)] + `}}`
	}
	return "7"
}

func (g *mergeGen) path(maxLen int) []string {
	p := make([]string, 1+g.r.Intn(maxLen))
	for i := range p {
		p[i] = g.key()
	}
	return p
}

// patch is a random PATCH body whose paths do not overlap; a quarter of
// them only have one-key paths.
func (g *mergeGen) patch(n int) string {
	var paths [][]string
	flat := g.r.Intn(4) == 0
	if flat {
		n = min(n, len(g.keys))
	}
	for len(paths) < n {
		if flat {
			p := []string{g.key()}
			if !slices.ContainsFunc(paths, func(q []string) bool { return q[0] == p[0] }) {
				paths = append(paths, p)
			}
			continue
		}
		p := g.path(3)
		if g.r.Intn(5) == 0 {
			if g.r.Intn(3) == 0 {
				p = p[:len(p)-1]
			}
			p = append(p, ".priority")
		}
		ok := true
		for _, q := range paths {
			if Path(p).HasPrefix(Path(q)) || Path(q).HasPrefix(Path(p)) {
				ok = false
				break
			}
		}
		if ok {
			paths = append(paths, p)
		}
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, p := range paths {
		if i > 0 {
			b.WriteByte(',')
		}
		v := g.value(2, true)
		if p[len(p)-1] == ".priority" {
			v = g.prio()
		} else if g.r.Intn(3) == 0 {
			v = "null"
		}
		fmt.Fprintf(&b, "%s:%s", g.str(strings.Join(p, "/")), v)
	}
	b.WriteByte('}')
	return b.String()
}

// tree is a random tree: a random body, then a few random updates (so
// that objects carry priorities set after they were made).
func (g *mergeGen) tree(tb testing.TB) *Node {
	var root *Node
	if g.r.Intn(8) > 0 {
		v, err := ParseBody([]byte(g.value(3, false)), MaxDepth)
		if err != nil {
			tb.Fatal(err)
		}
		root = v
	}
	for i := g.r.Intn(3); i > 0; i-- {
		w := Write{Path: Path(g.path(2))[:g.r.Intn(2)], Now: 5}
		fields, err := ParseUpdate([]byte(g.patch(1+g.r.Intn(3))), MaxDepth-len(w.Path))
		if err != nil {
			continue
		}
		if next, _, _, err := UpdateInOrder(root, w, fields); err == nil {
			root = next
		}
	}
	return root
}

// TestMergeUpdateMatchesInOrder applies random PATCHes, parsed and as
// text, with the one-pass merge and with the field-by-field reference:
// trees, sizes, echoes, fields, events and errors must be identical.
func TestMergeUpdateMatchesInOrder(t *testing.T) { testMergeRandom(t, 1, 20000) }

// TestMergeUpdateParallel is TestMergeUpdateMatchesInOrder and
// TestMergeUpdateLarge with tiny batches of children, each shared among
// goroutines and put in place while the next is merged (go test -race
// checks that they share nothing else).
func TestMergeUpdateParallel(t *testing.T) {
	defer func(n, b int) { parallelMin, mergeBatch = n, b }(parallelMin, mergeBatch)
	parallelMin, mergeBatch = 2, 3
	testMergeRandom(t, 2, 5000)
	TestMergeUpdateLarge(t)
	TestMergeUpdateOrder(t)
}

func testMergeRandom(t *testing.T, seed int64, n int) {
	if testing.Short() {
		n /= 10
	}
	g := newMergeGen(seed)
	for i := range n {
		root := g.tree(t)
		body := g.patch(1 + g.r.Intn(8))
		u := update{w: Write{Now: 1700000000000}, body: body}
		if g.r.Intn(2) == 0 {
			u.w.Path = g.path(2)
		}
		if g.r.Intn(4) == 0 {
			u.w.WriteLimit = int64(g.r.Intn(400))
		}
		// A parsed entry (every client's write) checks increments.
		u.w.CheckIncrements = g.r.Intn(2) == 0
		if d := diffUpdate(root, u); d != "" {
			t.Fatalf("case %d: PATCH %s %s onto %s: %s", i, u.w.Path, body, renderExport(root), d)
		}
	}
}

// TestMergeUpdateCrafted covers field lists no parser makes, which only
// a crafted parsed entry of fsm carries: overlapping and repeated paths,
// ".priority" inside a path, empty paths, keys that are not UTF-8,
// priorities of the wrong kind.
func TestMergeUpdateCrafted(t *testing.T) {
	base, err := ParseBody([]byte(`{"a":{"b":1,"c":{"d":2}},"e":"x","f":{".value":3,".priority":1},"n":1e308,"g":{".value":1,".priority":1e308}}`), MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(v int64) *Node { return Int(v) }
	cases := [][]Field{
		{{Path: Path{"a"}, Value: leaf(1)}, {Path: Path{"a", "b"}, Value: leaf(2)}},
		{{Path: Path{"a", "b"}, Value: leaf(2)}, {Path: Path{"a"}, Value: nil}},
		{{Path: Path{"a", "b"}, Value: leaf(2)}, {Path: Path{"a", "b"}, Value: leaf(3)}},
		{{Path: Path{"a", ".priority"}, Value: leaf(2)}, {Path: Path{"a", ".priority"}, Value: leaf(3)}},
		{{Path: Path{"a", ".priority", "x"}, Value: leaf(2)}},
		{{Path: Path{}, Value: leaf(2)}},
		{{Path: Path{"e", "\xff"}, Value: leaf(2)}, {Path: Path{"z"}, Value: leaf(1)}},
		{{Path: Path{"a", ".priority"}, Value: Bool(true)}},
		{{Path: Path{"z"}, Value: leaf(1)}, {Path: Path{"a", ".priority"}, Value: Bool(true)}, {Path: Path{"y"}, Value: ServerIncrement(Float(1e308))}},
		{{Path: Path{"y"}, Value: ServerIncrement(Float(1e308))}, {Path: Path{"f", ".priority"}, Value: ServerIncrement(Float(1e308))}},
		{{Path: Path{"a/b"}, Value: leaf(1)}, {Path: Path{"a", "b"}, Value: leaf(2)}},
		// The first failing field's error, whatever the key order.
		{{Path: Path{"a", ".priority"}, Value: Bool(true)}, {Path: Path{"n"}, Value: ServerIncrement(Float(1e308))}},
		{{Path: Path{"n"}, Value: ServerIncrement(Float(1e308))}, {Path: Path{"a", ".priority"}, Value: Bool(true)}},
		{{Path: Path{"b"}, Value: Int(1)}, {Path: Path{"g", ".priority"}, Value: ServerIncrement(Float(1e308))}},
		{{Path: Path{"g", ".priority"}, Value: ServerIncrement(Int(1))}, {Path: Path{"g", "x"}, Value: Int(1)}},
		{{Path: Path{"n"}, Value: ServerIncrement(Float(1e308))}, {Path: Path{"n"}, Value: Int(1)}},
		{{Path: Path{"a", "b"}, Value: leaf(1)}, {Path: Path{"a/b"}, Value: nil}, {Path: Path{"a/b/"}, Value: leaf(3)}},
	}
	for i, fields := range cases {
		for _, path := range []Path{nil, {"a"}, {"a", ".priority"}, {"\xfe"}} {
			for _, limit := range []int64{0, 20} {
				u := update{w: Write{Path: path, Now: 9, WriteLimit: limit, CheckIncrements: true}, fields: fields}
				if d := diffUpdate(base, u); d != "" {
					t.Fatalf("case %d at %s: %s", i, path, d)
				}
			}
		}
	}
}

// TestMergeUpdateOrder pins the cases where the fields' order decides the
// result, against the reference.
func TestMergeUpdateOrder(t *testing.T) {
	cases := []struct{ tree, path, body string }{
		// The only child deleted, then the node recreated: its priority is gone.
		{`{"a":{"b":1,".priority":5}}`, "/", `{"a/b":null,"a/c":2}`},
		{`{"a":{"b":1,".priority":5}}`, "/", `{"a/c":2,"a/b":null}`},
		// ... and its parent's too.
		{`{"a":{"x":{"b":1},".priority":5}}`, "/", `{"a/x/b":null,"a/y":2,"a/.priority":7}`},
		{`{"a":{"x":{"b":1},".priority":5}}`, "/", `{"a/.priority":7,"a/x/b":null,"a/y":2}`},
		// A priority on a leaf before and after it becomes an object.
		{`{"a":{".value":1,".priority":"p"}}`, "/", `{"a/.priority":"qq","a/b":2}`},
		{`{"a":{".value":1,".priority":"p"}}`, "/", `{"a/b":2,"a/.priority":"qq"}`},
		{`{"a":1}`, "/", `{"a/.priority":"qq","a/b":2}`},
		{`{"a":1}`, "/", `{"a/.priority":null,"a/b":2}`},
		// A priority on a node before it exists, and after.
		{`{}`, "/x", `{".priority":1,"a":2}`},
		{`{}`, "/x", `{"a":2,".priority":1}`},
		{`{"x":{"a":1}}`, "/x", `{"a":null,".priority":1,"b":2}`},
		{`{"x":{"a":1}}`, "/x", `{"a":null,"b":2,".priority":1}`},
		// Deletes through leaves and missing nodes change nothing.
		{`{"a":"s"}`, "/", `{"a/b/c":null,"a/d":null}`},
		{`{"a":{"b":1}}`, "/", `{"a/b/c":null,"q/r":null}`},
		// A value that is the very node already there (parsed booleans
		// are shared).
		{`{"a":true,"b":1}`, "/", `{"a":true,"c":2}`},
		{`{"a":true,"b":1}`, "/", `{"a":true,"b":null}`},
		{`{"a":true,"b":1}`, "/", `{"a":true,"c/d":2}`},
		// Everything deleted.
		{`{"a":{"b":1},"c":2}`, "/", `{"a/b":null,"c":null}`},
		{`{"a":{"b":1},"c":2}`, "/", `{"a/b":null,"c":null,"d/.priority":3}`},
		{`{"a":{"b":1},".priority":2}`, "/", `{"a/b":null,".priority":3,"z":1}`},
		{`{"a":{"b":1},".priority":2}`, "/", `{"a/b":null,"z":1,".priority":3}`},
	}
	for _, tc := range cases {
		root, err := ParseBody([]byte(tc.tree), MaxDepth)
		if err != nil {
			t.Fatal(err)
		}
		for _, parsed := range []bool{false, true} {
			path, err := SplitPath(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			u := update{w: Write{Path: path, Now: 3, CheckIncrements: parsed}, body: tc.body}
			if d := diffUpdate(root, u); d != "" {
				t.Fatalf("PATCH %s %s onto %s: %s", tc.path, tc.body, tc.tree, d)
			}
		}
	}
}

// TestMergeUpdateLarge checks the bulk paths (new B-trees loaded in order,
// kept children hashed instead of dropped ones) against the reference on
// objects of a few thousand children.
func TestMergeUpdateLarge(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	var base strings.Builder
	base.WriteString(`{"big":{`)
	for i := range 3000 {
		fmt.Fprintf(&base, `"k%d":%d,`, i, i)
	}
	base.WriteString(`"z":{"y":1}},"other":1}`)
	root, err := ParseBody([]byte(base.String()), MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 30 {
		var b strings.Builder
		b.WriteByte('{')
		n := []int{1, 10, 500, 2900, 4000}[round%5]
		seen := map[int]bool{}
		for j := 0; j < n; j++ {
			k := r.Intn(4000)
			if seen[k] {
				continue
			}
			seen[k] = true
			v := fmt.Sprint(r.Intn(9))
			switch r.Intn(4) {
			case 0:
				v = "null"
			case 1:
				v = fmt.Sprintf(`{"x":%d}`, j)
			}
			key := fmt.Sprintf("k%d", k)
			if r.Intn(10) == 0 {
				key += "/q"
			}
			fmt.Fprintf(&b, `%q:%s,`, key, v)
		}
		b.WriteString(`"z/y":null}`)
		for _, path := range []string{"/big", "/"} {
			body := b.String()
			if path == "/" {
				body = strings.ReplaceAll(body, `{"`, `{"big/`)
				body = strings.ReplaceAll(body, `,"`, `,"big/`)
				body = strings.Replace(body, `{"big/x"`, `{"x"`, -1)
			}
			fields, err := ParseUpdate([]byte(body), MaxDepth)
			if err != nil {
				t.Fatal(err)
			}
			p, err := SplitPath(path)
			if err != nil {
				t.Fatal(err)
			}
			u := update{w: Write{Path: p, Now: 1, CheckIncrements: true}, fields: fields}
			if d := diffUpdate(root, u); d != "" {
				t.Fatalf("round %d at %s: %s", round, path, d)
			}
		}
	}
}
