package e2e

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestREST walks the seed document and SPEC §1–§4 over HTTPS against one
// real node. Each subtest owns a distinct top-level key, so they share the
// node without seeing each other's data.
func TestREST(t *testing.T) {
	n := StartReadyNode(t, Options{})
	t.Run("Methods", func(t *testing.T) { testMethods(t, n) })
	t.Run("PATCH", func(t *testing.T) { testPatch(t, n) })
	t.Run("MethodOverride", func(t *testing.T) { testMethodOverride(t, n) })
	t.Run("Addressing", func(t *testing.T) { testAddressing(t, n) })
	t.Run("MissingAndPruning", func(t *testing.T) { testMissingAndPruning(t, n) })
	t.Run("Arrays", func(t *testing.T) { testArrays(t, n) })
	t.Run("Numbers", func(t *testing.T) { testNumbers(t, n) })
	t.Run("Priorities", func(t *testing.T) { testPriorities(t, n) })
	t.Run("ServerValues", func(t *testing.T) { testServerValues(t, n) })
	t.Run("Print", func(t *testing.T) { testPrint(t, n) })
	t.Run("Shallow", func(t *testing.T) { testShallow(t, n) })
	t.Run("CallbackDownloadTimeout", func(t *testing.T) { testCallbackDownloadTimeout(t, n) })
	t.Run("WriteSizeLimit", func(t *testing.T) { testWriteSizeLimit(t, n) })
	t.Run("ETag", func(t *testing.T) { testETag(t, n) })
	t.Run("IfMatch", func(t *testing.T) { testIfMatch(t, n) })
	t.Run("Headers", func(t *testing.T) { testHeaders(t, n) })
}

// testMethods: seed §4.1–§4.5, each method's success status and body.
func testMethods(t *testing.T, n *Node) {
	jack := `{"age":30,"name":{"first":"Jack","last":"Sparrow"}}`
	// PUT answers the value written (children in key order) and GET reads it.
	wantResponse(t, "PUT jack", n.Do(t, "PUT", "/methods/users/jack.json", `{"name":{"first":"Jack","last":"Sparrow"},"age":30}`), 200, jack)
	wantResponse(t, "GET jack", n.Do(t, "GET", "/methods/users/jack.json", ""), 200, jack)
	wantResponse(t, "GET a child", n.Do(t, "GET", "/methods/users/jack/name/first.json", ""), 200, `"Jack"`)

	// PUT clears the node first: children not in the body are gone.
	wantResponse(t, "PUT replaces", n.Do(t, "PUT", "/methods/users/jack.json", `{"age":31}`), 200, `{"age":31}`)
	wantResponse(t, "GET after PUT", n.Do(t, "GET", "/methods/users/jack.json", ""), 200, `{"age":31}`)

	// POST adds a child under a new push key and answers {"name":key};
	// the body is JSON whatever the Content-Type says (seed §4.3).
	r := n.Do(t, "POST", "/methods/msgs.json", `{"text":"hi"}`, "Content-Type", "application/x-www-form-urlencoded")
	key, err := pushName(r)
	if err != nil {
		t.Fatal(err)
	}
	wantResponse(t, "GET pushed child", n.Do(t, "GET", "/methods/msgs/"+key+".json", ""), 200, `{"text":"hi"}`)
	r = n.Do(t, "POST", "/methods/msgs.json", `"second"`)
	key2, err := pushName(r)
	if err != nil {
		t.Fatal(err)
	}
	if key2 <= key {
		t.Errorf("second push key %q does not sort after the first %q", key2, key)
	}
	wantResponse(t, "GET both pushes", n.Do(t, "GET", "/methods/msgs.json", ""), 200,
		`{"`+key+`":{"text":"hi"},"`+key2+`":"second"}`)

	// PATCH merges: children not named are left alone.
	wantResponse(t, "PATCH", n.Do(t, "PATCH", "/methods/users/jack.json", `{"nick":"J"}`), 200, `{"nick":"J"}`)
	wantResponse(t, "GET after PATCH", n.Do(t, "GET", "/methods/users/jack.json", ""), 200, `{"age":31,"nick":"J"}`)

	// DELETE answers null, and the node reads null afterwards.
	wantResponse(t, "DELETE", n.Do(t, "DELETE", "/methods/users/jack.json", ""), 200, "null")
	wantResponse(t, "GET deleted", n.Do(t, "GET", "/methods/users/jack.json", ""), 200, "null")
	wantResponse(t, "DELETE missing", n.Do(t, "DELETE", "/methods/users/nobody.json", ""), 200, "null")

	// A primitive at the root of a subtree, and PUT null deleting.
	wantResponse(t, "PUT string", n.Do(t, "PUT", "/methods/s.json", `"text"`), 200, `"text"`)
	wantResponse(t, "PUT null", n.Do(t, "PUT", "/methods/s.json", `null`), 200, "null")
	wantResponse(t, "GET after PUT null", n.Do(t, "GET", "/methods/s.json", ""), 200, "null")
	wantResponse(t, "PUT bool", n.Do(t, "PUT", "/methods/b.json", `false`), 200, "false")
	wantResponse(t, "GET bool", n.Do(t, "GET", "/methods/b.json", ""), 200, "false")
}

// testPatch: seed §4.4's multi-path update, nested-object pitfall, and
// mixed update and delete (SPEC §2).
func testPatch(t *testing.T, n *Node) {
	mustStatus(t, "setup", n.Do(t, "PUT", "/patch/users.json",
		`{"alan":{"name":"Alan","nickname":"A"},"grace":{"name":"Grace","nickname":"G"},"tim":{"name":"Tim"}}`), 200)

	// Multi-path: each field is a relative path set independently.
	wantResponse(t, "multi-path PATCH", n.Do(t, "PATCH", "/patch/users.json",
		`{"alan/nickname":"Alan The Machine","grace/nickname":"Amazing Grace"}`),
		200, `{"alan/nickname":"Alan The Machine","grace/nickname":"Amazing Grace"}`)
	wantResponse(t, "after multi-path", n.Do(t, "GET", "/patch/users.json", ""), 200,
		`{"alan":{"name":"Alan","nickname":"Alan The Machine"},"grace":{"name":"Grace","nickname":"Amazing Grace"},"tim":{"name":"Tim"}}`)

	// A nested object at a field replaces that child wholesale.
	wantResponse(t, "nested-object PATCH", n.Do(t, "PATCH", "/patch/users.json", `{"alan":{"nickname":"Al"}}`),
		200, `{"alan":{"nickname":"Al"}}`)
	wantResponse(t, "after nested object", n.Do(t, "GET", "/patch/users/alan.json", ""), 200, `{"nickname":"Al"}`)

	// null deletes that path; one PATCH may set and delete together.
	wantResponse(t, "mixed PATCH", n.Do(t, "PATCH", "/patch/users.json", `{"tim":null,"grace/nickname":null,"ada/name":"Ada"}`),
		200, `{"tim":null,"grace/nickname":null,"ada/name":"Ada"}`)
	wantResponse(t, "after mixed", n.Do(t, "GET", "/patch/users.json", ""), 200,
		`{"ada":{"name":"Ada"},"alan":{"nickname":"Al"},"grace":{"name":"Grace"}}`)

	// A deep path creates the nodes on the way.
	mustStatus(t, "deep PATCH", n.Do(t, "PATCH", "/patch/deep.json", `{"a/b/c/d":1}`), 200)
	wantResponse(t, "after deep PATCH", n.Do(t, "GET", "/patch/deep.json", ""), 200, `{"a":{"b":{"c":{"d":1}}}}`)

	// PATCH null deletes the node itself.
	wantResponse(t, "PATCH null", n.Do(t, "PATCH", "/patch/deep.json", `null`), 200, "null")
	wantResponse(t, "after PATCH null", n.Do(t, "GET", "/patch/deep.json", ""), 200, "null")

	// Overlapping fields and non-object bodies are refused, and change nothing.
	before := n.Do(t, "GET", "/patch.json", "").Body
	for _, body := range []string{`{"ada":1,"ada/name":2}`, `[1,2]`, `5`, `"x"`, `true`} {
		r := n.Do(t, "PATCH", "/patch/users.json", body)
		if r.Status != http.StatusBadRequest {
			t.Errorf("PATCH %s: got %d %q, want 400", body, r.Status, r.Body)
		}
		errorMessage(t, "PATCH "+body, r.Body)
	}
	wantResponse(t, "after refused PATCHes", n.Do(t, "GET", "/patch.json", ""), 200, before)
}

// testMethodOverride: seed §4.6 — a POST handled as the method named by
// the header or the query parameter, in any case.
func testMethodOverride(t *testing.T, n *Node) {
	mustStatus(t, "setup", n.Do(t, "PUT", "/override.json", `{"a":1,"b":2,"c":3}`), 200)

	wantResponse(t, "header DELETE", n.Do(t, "POST", "/override/a.json", "", "X-HTTP-Method-Override", "DELETE"), 200, "null")
	wantResponse(t, "query delete", n.Do(t, "POST", "/override/b.json?x-http-method-override=delete", ""), 200, "null")
	wantResponse(t, "after DELETE overrides", n.Do(t, "GET", "/override.json", ""), 200, `{"c":3}`)

	wantResponse(t, "header put", n.Do(t, "POST", "/override/p.json", `{"x":1}`, "X-HTTP-Method-Override", "put"), 200, `{"x":1}`)
	wantResponse(t, "query Patch", n.Do(t, "POST", "/override/p.json?x-http-method-override=Patch", `{"y":2}`), 200, `{"y":2}`)
	wantResponse(t, "after PUT/PATCH overrides", n.Do(t, "GET", "/override/p.json", ""), 200, `{"x":1,"y":2}`)
	wantResponse(t, "header GET", n.Do(t, "POST", "/override/c.json", "", "X-HTTP-Method-Override", "get"), 200, "3")

	r := n.Do(t, "POST", "/override/list.json", `"v"`, "X-HTTP-Method-Override", "POST")
	if _, err := pushName(r); err != nil {
		t.Errorf("header POST: %v", err)
	}

	// Another value is a 400, and nothing is written.
	for _, h := range [][]string{{"X-HTTP-Method-Override", "FOO"}, {"X-HTTP-Method-Override", "OPTIONS"}} {
		r := n.Do(t, "POST", "/override/c.json", `7`, h...)
		if r.Status != http.StatusBadRequest {
			t.Errorf("override %s: got %d %q, want 400", h[1], r.Status, r.Body)
		}
		errorMessage(t, "override "+h[1], r.Body)
	}
	r = n.Do(t, "POST", "/override/c.json?x-http-method-override=HEAD", `7`)
	if r.Status != http.StatusBadRequest {
		t.Errorf("query override HEAD: got %d %q, want 400", r.Status, r.Body)
	}
	wantResponse(t, "after refused overrides", n.Do(t, "GET", "/override/c.json", ""), 200, "3")
}

// testAddressing: SPEC §1's URL forms and path decoding.
func testAddressing(t *testing.T, n *Node) {
	// /<path>/.json is the same node as /<path>.json.
	wantResponse(t, "PUT /path/.json", n.Do(t, "PUT", "/addr/users/jack/.json", `{"name":"Jack"}`), 200, `{"name":"Jack"}`)
	wantResponse(t, "GET /path.json", n.Do(t, "GET", "/addr/users/jack.json", ""), 200, `{"name":"Jack"}`)
	wantResponse(t, "GET /path/.json", n.Do(t, "GET", "/addr/users/jack/name/.json", ""), 200, `"Jack"`)

	// Repeated and leading empty segments are dropped.
	wantResponse(t, "GET //a//b.json", n.Do(t, "GET", "//addr//users//jack.json", ""), 200, `{"name":"Jack"}`)
	wantResponse(t, "PUT //a//b/.json", n.Do(t, "PUT", "//addr///users//jill//.json", `1`), 200, "1")
	wantResponse(t, "GET written via //", n.Do(t, "GET", "/addr/users/jill.json", ""), 200, "1")

	// The root is /.json (and //.json, what the admin SDK sends for a
	// DatabaseURL ending in "/").
	for _, root := range []string{"/.json", "//.json"} {
		r := n.Do(t, "GET", root, "")
		var tree map[string]json.RawMessage
		if err := json.Unmarshal([]byte(r.Body), &tree); r.Status != 200 || err != nil {
			t.Errorf("GET %s: %d %.200q (%v)", root, r.Status, r.Body, err)
		} else if string(tree["addr"]) != `{"users":{"jack":{"name":"Jack"},"jill":1}}` {
			t.Errorf("GET %s: addr is %s", root, tree["addr"])
		}
	}

	// Segments are percent-decoded as UTF-8.
	wantResponse(t, "PUT encoded", n.Do(t, "PUT", "/addr/enc/c%20d/%C3%A9.json", `1`), 200, "1")
	wantResponse(t, "GET decoded", n.Do(t, "GET", "/addr/enc.json", ""), 200, `{"c d":{"é":1}}`)
	wantResponse(t, "GET encoded differently", n.Do(t, "GET", "/addr/%65nc/c%20d.json", ""), 200, `{"é":1}`)

	// + in a path is a literal plus, never a space.
	wantResponse(t, "PUT plus", n.Do(t, "PUT", "/addr/plus/a+b.json", `"plus"`), 200, `"plus"`)
	wantResponse(t, "GET %2B", n.Do(t, "GET", "/addr/plus/a%2Bb.json", ""), 200, `"plus"`)
	wantResponse(t, "GET space", n.Do(t, "GET", "/addr/plus/a%20b.json", ""), 200, "null")
	wantResponse(t, "GET parent of plus", n.Do(t, "GET", "/addr/plus.json", ""), 200, `{"a+b":"plus"}`)

	// Without .json the path is not the REST API.
	wantError(t, "GET without .json", n.Do(t, "GET", "/addr/users/jack", ""), 404, "append .json to your request URI to use the REST API")
	wantError(t, "PUT without .json", n.Do(t, "PUT", "/addr/users", `1`), 404, "append .json to your request URI to use the REST API")
	wantError(t, "GET /", n.Do(t, "GET", "/", ""), 404, "append .json to your request URI to use the REST API")
	wantResponse(t, "nothing written without .json", n.Do(t, "GET", "/addr/users.json", ""), 200, `{"jack":{"name":"Jack"},"jill":1}`)
}

// testMissingAndPruning: a missing node is 200 null; there is no stored
// null or empty object, and a parent losing its last child disappears.
func testMissingAndPruning(t *testing.T, n *Node) {
	wantResponse(t, "missing", n.Do(t, "GET", "/prune/nothing/here.json", ""), 200, "null")
	wantResponse(t, "below a primitive", n.Do(t, "PUT", "/prune/leaf.json", `1`), 200, "1")
	wantResponse(t, "child of a primitive", n.Do(t, "GET", "/prune/leaf/child.json", ""), 200, "null")

	// null members are dropped from a written object; the answer is the
	// value written.
	wantResponse(t, "PUT with null member", n.Do(t, "PUT", "/prune/obj.json", `{"a":1,"b":null,"c":{"d":null}}`), 200, `{"a":1}`)
	wantResponse(t, "GET after null members", n.Do(t, "GET", "/prune/obj.json", ""), 200, `{"a":1}`)

	// {} removes the node.
	wantResponse(t, "PUT {}", n.Do(t, "PUT", "/prune/obj.json", `{}`), 200, "null")
	wantResponse(t, "GET after {}", n.Do(t, "GET", "/prune/obj.json", ""), 200, "null")

	// Deleting the last child removes the parents, recursively.
	mustStatus(t, "setup", n.Do(t, "PUT", "/prune/deep/a/b/c.json", `1`), 200)
	wantResponse(t, "DELETE last child", n.Do(t, "DELETE", "/prune/deep/a/b/c.json", ""), 200, "null")
	wantResponse(t, "parents gone", n.Do(t, "GET", "/prune/deep.json", ""), 200, "null")
	wantResponse(t, "siblings stay", n.Do(t, "GET", "/prune.json", ""), 200, `{"leaf":1}`)

	// So does a PATCH that nulls the last child.
	mustStatus(t, "setup", n.Do(t, "PUT", "/prune/p/q.json", `{"x":1}`), 200)
	mustStatus(t, "PATCH null", n.Do(t, "PATCH", "/prune/p/q.json", `{"x":null}`), 200)
	wantResponse(t, "after PATCH null", n.Do(t, "GET", "/prune/p.json", ""), 200, "null")
	wantResponse(t, "root of the subtest", n.Do(t, "GET", "/prune.json", ""), 200, `{"leaf":1}`)
}

// testArrays: SPEC §1's array rule on read, and arrays stored as objects.
func testArrays(t *testing.T, n *Node) {
	// Null elements are dropped; {"0":1,"2":3} still reads as an array.
	wantResponse(t, "PUT array with null", n.Do(t, "PUT", "/arrays/a.json", `[1,null,3]`), 200, `[1,null,3]`)
	wantResponse(t, "GET array", n.Do(t, "GET", "/arrays/a.json", ""), 200, `[1,null,3]`)
	wantResponse(t, "export is an object", n.Do(t, "GET", "/arrays/a.json?format=export", ""), 200, `{"0":1,"2":3}`)
	wantResponse(t, "element by index", n.Do(t, "GET", "/arrays/a/2.json", ""), 200, "3")

	for _, c := range []struct{ body, want string }{
		{`{"0":"a","1":"b"}`, `["a","b"]`},
		{`{"1":"x"}`, `[null,"x"]`},                              // 1 < 2×1
		{`{"2":"c","4":"e"}`, `{"2":"c","4":"e"}`},               // 4 ≥ 2×2
		{`{"0":"a","2":"c"}`, `["a",null,"c"]`},                  // 2 < 2×2
		{`{"01":1,"1":2}`, `{"1":2,"01":1}`},                     // not canonical: integer keys in numeric order, ties shorter first
		{`{"0":1,"a":2}`, `{"0":1,"a":2}`},                       // a non-integer key
		{`{"-1":1,"0":2}`, `{"-1":1,"0":2}`},                     // negative
		{`[[1,2],{"0":true}]`, `[[1,2],[true]]`},                 // at every level
		{`{"10":1,"9":2,"x":{"0":0}}`, `{"9":2,"10":1,"x":[0]}`}, // numeric key order
	} {
		wantResponse(t, "PUT "+c.body, n.Do(t, "PUT", "/arrays/b.json", c.body), 200, c.want)
		wantResponse(t, "GET "+c.body, n.Do(t, "GET", "/arrays/b.json", ""), 200, c.want)
	}

	// Deleting elements can turn an array back into an object.
	mustStatus(t, "setup", n.Do(t, "PUT", "/arrays/c.json", `["a","b","c","d","e"]`), 200)
	mustStatus(t, "PATCH deletes", n.Do(t, "PATCH", "/arrays/c.json", `{"0":null,"1":null,"3":null}`), 200)
	wantResponse(t, "sparse array", n.Do(t, "GET", "/arrays/c.json", ""), 200, `{"2":"c","4":"e"}`)
}

// testNumbers: integers and doubles stay distinct. Arbor renders a double
// with an integral value with ".0" (the choice documented in fsm/tree/render.go).
func testNumbers(t *testing.T, n *Node) {
	for _, c := range []struct{ body, want string }{
		{`5`, `5`},
		{`5.0`, `5.0`},
		{`5.5`, `5.5`},
		{`-7`, `-7`},
		{`0`, `0`},
		{`9223372036854775807`, `9223372036854775807`},
		{`-9223372036854775808`, `-9223372036854775808`},
		{`1e3`, `1000.0`},
		{`0.1`, `0.1`},
		{`{"i":1,"d":1.0}`, `{"d":1.0,"i":1}`},
	} {
		wantResponse(t, "PUT "+c.body, n.Do(t, "PUT", "/numbers/x.json", c.body), 200, c.want)
		wantResponse(t, "GET "+c.body, n.Do(t, "GET", "/numbers/x.json", ""), 200, c.want)
	}
}

// testPriorities: .priority at any depth, .value, /.priority.json and
// format=export (SPEC §2).
func testPriorities(t *testing.T, n *Node) {
	// GET strips priorities; export shows them.
	wantResponse(t, "PUT with priority", n.Do(t, "PUT", "/prio/tom.json", `{"name":{"first":"Tom"},".priority":1.0}`), 200, `{"name":{"first":"Tom"}}`)
	wantResponse(t, "GET strips", n.Do(t, "GET", "/prio/tom.json", ""), 200, `{"name":{"first":"Tom"}}`)
	wantResponse(t, "export", n.Do(t, "GET", "/prio/tom.json?format=export", ""), 200, `{".priority":1.0,"name":{"first":"Tom"}}`)
	wantResponse(t, "GET .priority", n.Do(t, "GET", "/prio/tom/.priority.json", ""), 200, "1.0")

	// A primitive gets a priority through .value.
	wantResponse(t, "PUT .value", n.Do(t, "PUT", "/prio/n.json", `{".value":5,".priority":"hi"}`), 200, "5")
	wantResponse(t, "GET .value", n.Do(t, "GET", "/prio/n.json", ""), 200, "5")
	wantResponse(t, "export .value", n.Do(t, "GET", "/prio/n.json?format=export", ""), 200, `{".value":5,".priority":"hi"}`)
	wantResponse(t, "GET .priority of a leaf", n.Do(t, "GET", "/prio/n/.priority.json", ""), 200, `"hi"`)

	// /.priority.json writes a node's priority alone.
	wantResponse(t, "PUT .priority", n.Do(t, "PUT", "/prio/tom/name/.priority.json", `"p"`), 200, `"p"`)
	wantResponse(t, "GET after PUT .priority", n.Do(t, "GET", "/prio/tom.json", ""), 200, `{"name":{"first":"Tom"}}`)
	wantResponse(t, "export nested", n.Do(t, "GET", "/prio/tom.json?format=export", ""), 200,
		`{".priority":1.0,"name":{".priority":"p","first":"Tom"}}`)
	wantResponse(t, "no priority", n.Do(t, "GET", "/prio/tom/name/first/.priority.json", ""), 200, "null")

	// Priorities deep inside a body; export never renders arrays.
	mustStatus(t, "PUT deep", n.Do(t, "PUT", "/prio/list.json", `{"0":{".value":"a",".priority":2},"1":"b"}`), 200)
	wantResponse(t, "GET deep", n.Do(t, "GET", "/prio/list.json", ""), 200, `["a","b"]`)
	wantResponse(t, "export deep", n.Do(t, "GET", "/prio/list.json?format=export", ""), 200, `{"0":{".value":"a",".priority":2},"1":"b"}`)

	// Deleting the priority leaves the value.
	wantResponse(t, "DELETE .priority", n.Do(t, "DELETE", "/prio/n/.priority.json", ""), 200, "null")
	wantResponse(t, "export without priority", n.Do(t, "GET", "/prio/n.json?format=export", ""), 200, "5")
}

// testServerValues: timestamp resolved once at write time; increment
// evaluated against the current value, int+int staying int.
func testServerValues(t *testing.T, n *Node) {
	before := time.Now().UnixMilli()
	r := n.Do(t, "PUT", "/sv/t.json", `{"at":{".sv":"timestamp"},"n":1}`)
	after := time.Now().UnixMilli()
	var got struct {
		At json.Number `json:"at"`
		N  int         `json:"n"`
	}
	if err := json.Unmarshal([]byte(r.Body), &got); r.Status != 200 || err != nil {
		t.Fatalf("PUT timestamp: %d %q (%v)", r.Status, r.Body, err)
	}
	at, err := strconv.ParseInt(string(got.At), 10, 64)
	if err != nil || at < before || at > after || got.N != 1 {
		t.Errorf("PUT timestamp answered %s, want an integer in [%d, %d]", r.Body, before, after)
	}
	wantResponse(t, "GET timestamp", n.Do(t, "GET", "/sv/t.json", ""), 200, r.Body)

	// A timestamp inside a PATCH.
	r = n.Do(t, "PATCH", "/sv/t.json", `{"patched":{".sv":"timestamp"}}`)
	var p struct {
		Patched int64 `json:"patched"`
	}
	if err := json.Unmarshal([]byte(r.Body), &p); r.Status != 200 || err != nil || p.Patched < at {
		t.Errorf("PATCH timestamp: %d %q (%v)", r.Status, r.Body, err)
	}

	// increment: missing → n; int+int → int; any double → double.
	wantResponse(t, "increment missing", n.Do(t, "PUT", "/sv/c.json", `{".sv":{"increment":1}}`), 200, "1")
	wantResponse(t, "increment int", n.Do(t, "PUT", "/sv/c.json", `{".sv":{"increment":41}}`), 200, "42")
	wantResponse(t, "GET int", n.Do(t, "GET", "/sv/c.json", ""), 200, "42")
	wantResponse(t, "increment negative", n.Do(t, "PUT", "/sv/c.json", `{".sv":{"increment":-2}}`), 200, "40")
	wantResponse(t, "increment double", n.Do(t, "PUT", "/sv/c.json", `{".sv":{"increment":2.5}}`), 200, "42.5")
	wantResponse(t, "increment int on double", n.Do(t, "PUT", "/sv/c.json", `{".sv":{"increment":1}}`), 200, "43.5")
	wantResponse(t, "increment a string", n.Do(t, "PUT", "/sv/s.json", `"text"`), 200, `"text"`)
	wantResponse(t, "increment non-number", n.Do(t, "PUT", "/sv/s.json", `{".sv":{"increment":3}}`), 200, "3")
	mustStatus(t, "max int", n.Do(t, "PUT", "/sv/big.json", `9223372036854775807`), 200)
	r = n.Do(t, "PUT", "/sv/big.json", `{".sv":{"increment":1}}`)
	if f, err := strconv.ParseFloat(r.Body, 64); r.Status != 200 || err != nil || f != 9223372036854775808.0 || !strings.ContainsAny(r.Body, ".eE") {
		t.Errorf("increment overflow: %d %q, want the double 9.223372036854775808e18", r.Status, r.Body)
	}

	// increment inside a PATCH is evaluated against each field's value.
	mustStatus(t, "setup", n.Do(t, "PUT", "/sv/counters.json", `{"a":10,"b":1.5}`), 200)
	wantResponse(t, "PATCH increments", n.Do(t, "PATCH", "/sv/counters.json",
		`{"a":{".sv":{"increment":5}},"b":{".sv":{"increment":1}},"c":{".sv":{"increment":7}}}`),
		200, `{"a":15,"b":2.5,"c":7}`)
	wantResponse(t, "GET increments", n.Do(t, "GET", "/sv/counters.json", ""), 200, `{"a":15,"b":2.5,"c":7}`)

	// Any other .sv is a 400 and writes nothing.
	for _, body := range []string{`{".sv":"nope"}`, `{"x":{".sv":{"decrement":1}}}`, `{".sv":{"increment":"1"}}`} {
		wantError(t, "PUT "+body, n.Do(t, "PUT", "/sv/c.json", body), 400, "Invalid data; unrecognized server value")
	}
	wantResponse(t, "unchanged", n.Do(t, "GET", "/sv/c.json", ""), 200, "43.5")
}

// testPrint: print=pretty's exact bytes on every method, print=silent's
// 204 with an empty body on every method.
func testPrint(t *testing.T, n *Node) {
	pretty := "{\n  \"a\" : {\n    \"b\" : [\n      1,\n      2.0,\n      \"s\"\n    ]\n  },\n  \"c\" : true,\n  \"d\" : \"x\"\n}"
	wantResponse(t, "PUT pretty", n.Do(t, "PUT", "/print/x.json?print=pretty", `{"a":{"b":[1,2.0,"s"]},"c":true,"d":"x"}`), 200, pretty)
	wantResponse(t, "GET pretty", n.Do(t, "GET", "/print/x.json?print=pretty", ""), 200, pretty)
	wantResponse(t, "GET pretty leaf", n.Do(t, "GET", "/print/x/d.json?print=pretty", ""), 200, `"x"`)
	wantResponse(t, "GET pretty missing", n.Do(t, "GET", "/print/none.json?print=pretty", ""), 200, "null")
	wantResponse(t, "PATCH pretty", n.Do(t, "PATCH", "/print/x.json?print=pretty", `{"c":false}`), 200, "{\n  \"c\" : false\n}")
	r := n.Do(t, "POST", "/print/list.json?print=pretty", `1`)
	var name struct{ Name string }
	if err := json.Unmarshal([]byte(r.Body), &name); err != nil || !validPushKey(name.Name) {
		t.Errorf("POST pretty: %d %q", r.Status, r.Body)
	}
	wantResponse(t, "POST pretty", r, 200, "{\n  \"name\" : \""+name.Name+"\"\n}")
	wantResponse(t, "DELETE pretty", n.Do(t, "DELETE", "/print/list.json?print=pretty", ""), 200, "null")

	// silent: 204, empty body, and the write still happens.
	silent := func(method, path, body string) {
		t.Helper()
		r := n.Do(t, method, path, body)
		wantResponse(t, method+" silent", r, http.StatusNoContent, "")
	}
	silent("GET", "/print/x.json?print=silent", "")
	silent("PUT", "/print/s.json?print=silent", `{"a":1}`)
	silent("PATCH", "/print/s.json?print=silent", `{"b":2}`)
	silent("POST", "/print/s/list.json?print=silent", `"pushed"`)
	r = n.Do(t, "GET", "/print/s.json?shallow=true", "")
	wantResponse(t, "silent writes happened", r, 200, `{"a":true,"b":true,"list":true}`)
	silent("DELETE", "/print/s.json?print=silent", "")
	wantResponse(t, "silent DELETE happened", n.Do(t, "GET", "/print/s.json", ""), 200, "null")
	silent("POST", "/print/x.json?print=silent&x-http-method-override=DELETE", "")
	wantResponse(t, "silent override happened", n.Do(t, "GET", "/print/x.json", ""), 200, "null")

	r = n.Do(t, "GET", "/print.json?print=loud", "")
	if r.Status != 400 {
		t.Errorf("print=loud: %d %q, want 400", r.Status, r.Body)
	}
	errorMessage(t, "print=loud", r.Body)
}

// testShallow: shallow=true turns an object's children into true and
// returns a primitive as is.
func testShallow(t *testing.T, n *Node) {
	mustStatus(t, "setup", n.Do(t, "PUT", "/shallow.json", `{"a":{"x":1},"b":2,"c":[1,2],"d":"s"}`), 200)
	wantResponse(t, "shallow object", n.Do(t, "GET", "/shallow.json?shallow=true", ""), 200, `{"a":true,"b":true,"c":true,"d":true}`)
	wantResponse(t, "shallow array", n.Do(t, "GET", "/shallow/c.json?shallow=true", ""), 200, `{"0":true,"1":true}`)
	wantResponse(t, "shallow primitive", n.Do(t, "GET", "/shallow/d.json?shallow=true", ""), 200, `"s"`)
	wantResponse(t, "shallow number", n.Do(t, "GET", "/shallow/b.json?shallow=true", ""), 200, `2`)
	wantResponse(t, "shallow missing", n.Do(t, "GET", "/shallow/zz.json?shallow=true", ""), 200, "null")
	wantResponse(t, "shallow=false", n.Do(t, "GET", "/shallow/a.json?shallow=false", ""), 200, `{"x":1}`)
	wantResponse(t, "shallow pretty", n.Do(t, "GET", "/shallow/a.json?shallow=true&print=pretty", ""), 200, "{\n  \"x\" : true\n}")
}

// testCallbackDownloadTimeout: JSONP, the download header and timeout
// validation (SPEC §3).
func testCallbackDownloadTimeout(t *testing.T, n *Node) {
	mustStatus(t, "setup", n.Do(t, "PUT", "/cdt.json", `{"a":[1,2],"s":"x"}`), 200)

	r := n.Do(t, "GET", "/cdt.json?callback=gotData", "")
	wantResponse(t, "callback", r, 200, `gotData({"a":[1,2],"s":"x"});`)
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/javascript") {
		t.Errorf("callback Content-Type %q, want application/javascript", ct)
	}
	wantResponse(t, "callback dotted", n.Do(t, "GET", "/cdt/s.json?callback=$app.cb_1", ""), 200, `$app.cb_1("x");`)
	wantResponse(t, "callback missing node", n.Do(t, "GET", "/cdt/zz.json?callback=f", ""), 200, `f(null);`)
	for _, bad := range []string{"1f", "a-b", "f()", "a%20b", ""} {
		r := n.Do(t, "GET", "/cdt.json?callback="+bad, "")
		if r.Status != 400 {
			t.Errorf("callback=%s: %d %q, want 400", bad, r.Status, r.Body)
		}
		errorMessage(t, "callback="+bad, r.Body)
	}

	r = n.Do(t, "GET", "/cdt.json?download=data.json", "")
	wantResponse(t, "download", r, 200, `{"a":[1,2],"s":"x"}`)
	if cd := r.Header.Get("Content-Disposition"); cd != `attachment; filename="data.json"` {
		t.Errorf("download: Content-Disposition %q", cd)
	}
	if r := n.Do(t, "GET", "/cdt.json", ""); r.Header.Get("Content-Disposition") != "" {
		t.Errorf("Content-Disposition without download: %q", r.Header.Get("Content-Disposition"))
	}

	for _, ok := range []string{"500ms", "3s", "1min", "15min", "900s"} {
		wantResponse(t, "timeout="+ok, n.Do(t, "GET", "/cdt/s.json?timeout="+ok, ""), 200, `"x"`)
	}
	for _, bad := range []string{"16min", "901s", "10", "abc", "1h", "-1s", "1.5s", "0ms", ""} {
		r := n.Do(t, "GET", "/cdt/s.json?timeout="+bad, "")
		if r.Status != 400 {
			t.Errorf("timeout=%s: %d %q, want 400", bad, r.Status, r.Body)
		}
		errorMessage(t, "timeout="+bad, r.Body)
	}
}

// testWriteSizeLimit: writeSizeLimit bounds the data written or removed
// by one request (SPEC §3).
func testWriteSizeLimit(t *testing.T, n *Node) {
	const tooBig = "Error: WRITE_TOO_BIG: Data to write exceeds the maximum size that can be modified with a single request."
	big := `"` + strings.Repeat("x", 70<<10) + `"` // over tiny (64 KiB), under small (1 MiB)

	wantError(t, "PUT over tiny", n.Do(t, "PUT", "/wsl/big.json?writeSizeLimit=tiny", big), 413, tooBig)
	wantResponse(t, "nothing written", n.Do(t, "GET", "/wsl/big.json", ""), 200, "null")
	wantError(t, "POST over tiny", n.Do(t, "POST", "/wsl/list.json?writeSizeLimit=tiny", big), 413, tooBig)
	wantError(t, "PATCH over tiny", n.Do(t, "PATCH", "/wsl.json?writeSizeLimit=tiny", `{"big":`+big+`}`), 413, tooBig)
	wantResponse(t, "nothing written by POST or PATCH", n.Do(t, "GET", "/wsl.json", ""), 200, "null")

	wantResponse(t, "PUT small under tiny", n.Do(t, "PUT", "/wsl/small.json?writeSizeLimit=tiny", `"ok"`), 200, `"ok"`)
	for _, limit := range []string{"small", "medium", "large", "unlimited"} {
		if r := n.Do(t, "PUT", "/wsl/big.json?print=silent&writeSizeLimit="+limit, big); r.Status != http.StatusNoContent {
			t.Errorf("PUT 70 KiB with writeSizeLimit=%s: %d %q", limit, r.Status, r.Body)
		}
	}
	if r := n.Do(t, "PUT", "/wsl/big.json?print=silent", big); r.Status != http.StatusNoContent {
		t.Errorf("PUT 70 KiB with the default limit (medium): %d %q", r.Status, r.Body)
	}

	// Removing counts too: deleting or overwriting 70 KiB exceeds tiny.
	wantError(t, "DELETE over tiny", n.Do(t, "DELETE", "/wsl/big.json?writeSizeLimit=tiny", ""), 413, tooBig)
	wantError(t, "overwrite over tiny", n.Do(t, "PUT", "/wsl/big.json?writeSizeLimit=tiny", `1`), 413, tooBig)
	if r := n.Do(t, "GET", "/wsl/big.json", ""); r.Body != big {
		t.Errorf("refused delete changed the value: %d, %d bytes", r.Status, len(r.Body))
	}
	wantResponse(t, "DELETE with small", n.Do(t, "DELETE", "/wsl/big.json?writeSizeLimit=small", ""), 200, "null")

	r := n.Do(t, "PUT", "/wsl/small.json?writeSizeLimit=huge", `1`)
	if r.Status != 400 {
		t.Errorf("writeSizeLimit=huge: %d %q, want 400", r.Status, r.Body)
	}
	errorMessage(t, "writeSizeLimit=huge", r.Body)
	wantResponse(t, "unchanged", n.Do(t, "GET", "/wsl.json", ""), 200, `{"small":"ok"}`)
}

// testETag: X-Firebase-ETag on GET, PUT, POST and DELETE, and
// If-None-Match (SPEC §4).
func testETag(t *testing.T, n *Node) {
	r := n.Do(t, "PUT", "/etag/v.json", `{"a":1}`, "X-Firebase-ETag", "true")
	put := r.Header.Get("ETag")
	if r.Status != 200 || put == "" || put == "null_etag" {
		t.Fatalf("PUT with X-Firebase-ETag: %d %q, ETag %q", r.Status, r.Body, put)
	}
	r = n.Do(t, "GET", "/etag/v.json", "", "x-firebase-etag", "TRUE")
	if r.Status != 200 || r.Header.Get("ETag") != put {
		t.Errorf("GET ETag %q, want the PUT's %q", r.Header.Get("ETag"), put)
	}
	if r := n.Do(t, "GET", "/etag/v.json", ""); r.Header.Get("ETag") != "" {
		t.Errorf("GET without X-Firebase-ETag has ETag %q", r.Header.Get("ETag"))
	}
	if r := n.Do(t, "GET", "/etag/missing.json", "", "X-Firebase-ETag", "true"); r.Body != "null" || r.Header.Get("ETag") != "null_etag" {
		t.Errorf("GET missing: %q ETag %q, want null null_etag", r.Body, r.Header.Get("ETag"))
	}

	// The ETag is a content hash: the same value gives the same ETag, a
	// different one a different ETag, whatever the key order of the body.
	if r := n.Do(t, "PUT", "/etag/w.json", `{"a":1}`, "X-Firebase-ETag", "true"); r.Header.Get("ETag") != put {
		t.Errorf("same value elsewhere: ETag %q, want %q", r.Header.Get("ETag"), put)
	}
	r = n.Do(t, "PUT", "/etag/v.json", `{"a":2}`, "X-Firebase-ETag", "true")
	changed := r.Header.Get("ETag")
	if changed == put || changed == "" {
		t.Errorf("changed value: ETag %q, was %q", changed, put)
	}
	mustStatus(t, "PUT", n.Do(t, "PUT", "/etag/o.json", `{"x":1,"y":2}`), 200)
	e1 := n.Do(t, "GET", "/etag/o.json", "", "X-Firebase-ETag", "true").Header.Get("ETag")
	mustStatus(t, "PUT", n.Do(t, "PUT", "/etag/o.json", `{"y":2,"x":1}`), 200)
	if e2 := n.Do(t, "GET", "/etag/o.json", "", "X-Firebase-ETag", "true").Header.Get("ETag"); e1 != e2 {
		t.Errorf("key order changed the ETag: %q vs %q", e1, e2)
	}
	if d := n.Do(t, "GET", "/etag/o.json", "", "X-Firebase-ETag", "true").Header.Get("ETag"); d != e1 {
		t.Errorf("ETag not stable: %q then %q", e1, d)
	}

	// POST answers an ETag; DELETE answers null_etag.
	r = n.Do(t, "POST", "/etag/list.json", `"p"`, "X-Firebase-ETag", "true")
	if _, err := pushName(r); err != nil || r.Header.Get("ETag") == "" {
		t.Errorf("POST with X-Firebase-ETag: %v, ETag %q", err, r.Header.Get("ETag"))
	}
	r = n.Do(t, "DELETE", "/etag/list.json", "", "X-Firebase-ETag", "true")
	if r.Status != 200 || r.Body != "null" || r.Header.Get("ETag") != "null_etag" {
		t.Errorf("DELETE with X-Firebase-ETag: %d %q ETag %q", r.Status, r.Body, r.Header.Get("ETag"))
	}

	// If-None-Match: 304 with an empty body if unchanged, else 200, the
	// value and the ETag even without X-Firebase-ETag.
	r = n.Do(t, "GET", "/etag/v.json", "", "If-None-Match", changed)
	wantResponse(t, "If-None-Match current", r, http.StatusNotModified, "")
	r = n.Do(t, "GET", "/etag/v.json", "", "If-None-Match", put)
	wantResponse(t, "If-None-Match stale", r, 200, `{"a":2}`)
	if r.Header.Get("ETag") != changed {
		t.Errorf("If-None-Match stale: ETag %q, want %q", r.Header.Get("ETag"), changed)
	}
	wantResponse(t, "If-None-Match null_etag on missing", n.Do(t, "GET", "/etag/missing.json", "", "If-None-Match", "null_etag"),
		http.StatusNotModified, "")
	wantResponse(t, "If-None-Match null_etag on present", n.Do(t, "GET", "/etag/v.json", "", "If-None-Match", "null_etag"), 200, `{"a":2}`)
}

// testIfMatch: conditional PUT and DELETE, 412 with the current value and
// ETag, null_etag, and the refused combinations (SPEC §4).
func testIfMatch(t *testing.T, n *Node) {
	etag := n.Do(t, "PUT", "/ifm/v.json", `12`, "X-Firebase-ETag", "true").Header.Get("ETag")

	// Success: the write happens and answers the value written.
	r := n.Do(t, "PUT", "/ifm/v.json", `13`, "if-match", etag)
	wantResponse(t, "if-match matching", r, 200, "13")
	newTag := n.Do(t, "GET", "/ifm/v.json", "", "X-Firebase-ETag", "true").Header.Get("ETag")

	// Mismatch: 412, the current value as the body, its ETag as a header.
	r = n.Do(t, "PUT", "/ifm/v.json", `14`, "If-Match", etag)
	wantResponse(t, "if-match stale", r, http.StatusPreconditionFailed, "13")
	if r.Header.Get("ETag") != newTag {
		t.Errorf("412 ETag %q, want the current %q", r.Header.Get("ETag"), newTag)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("412 Content-Type %q", ct)
	}
	wantResponse(t, "unchanged after 412", n.Do(t, "GET", "/ifm/v.json", ""), 200, "13")

	// An object's 412 body is the object, rendered as any GET is.
	mustStatus(t, "setup", n.Do(t, "PUT", "/ifm/o.json", `{"b":[1,2],"a":"x"}`), 200)
	r = n.Do(t, "PUT", "/ifm/o.json", `1`, "if-match", "not-the-etag")
	wantResponse(t, "412 object", r, http.StatusPreconditionFailed, `{"a":"x","b":[1,2]}`)

	// null_etag: create if absent.
	r = n.Do(t, "PUT", "/ifm/new.json", `{"created":true}`, "if-match", "null_etag")
	wantResponse(t, "null_etag on absent", r, 200, `{"created":true}`)
	r = n.Do(t, "PUT", "/ifm/new.json", `{"created":"again"}`, "if-match", "null_etag")
	wantResponse(t, "null_etag on present", r, http.StatusPreconditionFailed, `{"created":true}`)
	if r.Header.Get("ETag") == "" || r.Header.Get("ETag") == "null_etag" {
		t.Errorf("null_etag 412: ETag %q", r.Header.Get("ETag"))
	}

	// A mismatching DELETE on a missing node: 412 with null and null_etag.
	r = n.Do(t, "DELETE", "/ifm/absent.json", "", "if-match", newTag)
	wantResponse(t, "DELETE if-match on absent", r, http.StatusPreconditionFailed, "null")
	if r.Header.Get("ETag") != "null_etag" {
		t.Errorf("412 on absent: ETag %q, want null_etag", r.Header.Get("ETag"))
	}

	// DELETE with if-match.
	r = n.Do(t, "DELETE", "/ifm/v.json", "", "if-match", etag)
	wantResponse(t, "DELETE if-match stale", r, http.StatusPreconditionFailed, "13")
	r = n.Do(t, "DELETE", "/ifm/v.json", "", "if-match", newTag)
	wantResponse(t, "DELETE if-match current", r, 200, "null")
	wantResponse(t, "deleted", n.Do(t, "GET", "/ifm/v.json", ""), 200, "null")

	// if-match on PATCH or POST, or with print=silent, or on GET: 400.
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/ifm/new.json", `{"x":1}`},
		{"POST", "/ifm/list.json", `1`},
		{"PUT", "/ifm/new.json?print=silent", `1`},
		{"DELETE", "/ifm/new.json?print=silent", ``},
		{"GET", "/ifm/new.json", ``},
	} {
		r := n.Do(t, c.method, c.path, c.body, "if-match", "null_etag")
		if r.Status != http.StatusBadRequest {
			t.Errorf("%s %s with if-match: %d %q, want 400", c.method, c.path, r.Status, r.Body)
		}
		errorMessage(t, c.method+" "+c.path+" with if-match", r.Body)
	}
	wantResponse(t, "nothing changed", n.Do(t, "GET", "/ifm/new.json", ""), 200, `{"created":true}`)
	wantResponse(t, "no list", n.Do(t, "GET", "/ifm/list.json", ""), 200, "null")
}

// testHeaders: SPEC §7's response headers on every kind of answer, and the
// CORS preflight.
func testHeaders(t *testing.T, n *Node) {
	mustStatus(t, "setup", n.Do(t, "PUT", "/hdr.json", `1`), 200)
	for _, c := range []struct {
		what   string
		method string
		path   string
		body   string
		status int
		hdr    []string
	}{
		{"GET", "GET", "/hdr.json", "", 200, nil},
		{"PUT", "PUT", "/hdr.json", "2", 200, nil},
		{"POST", "POST", "/hdr/list.json", "3", 200, nil},
		{"PATCH", "PATCH", "/hdr/o.json", `{"a":1}`, 200, nil},
		{"DELETE", "DELETE", "/hdr/o.json", "", 200, nil},
		{"silent", "GET", "/hdr.json?print=silent", "", 204, nil},
		{"400", "PUT", "/hdr.json", "{", 400, nil},
		{"404", "GET", "/hdr", "", 404, nil},
		{"412", "PUT", "/hdr.json", "5", 412, []string{"if-match", "x"}},
		{"304", "GET", "/hdr/none.json", "", 304, []string{"If-None-Match", "null_etag"}},
	} {
		r := n.Do(t, c.method, c.path, c.body, c.hdr...)
		if r.Status != c.status {
			t.Errorf("%s: status %d %q, want %d", c.what, r.Status, r.Body, c.status)
		}
		checkCommonHeaders(t, c.what, r, c.status != 304 && c.status != 204)
	}

	// Without credentials: the 401 carries the same headers.
	r := n.DoAs(t, noAuth, "GET", "/hdr.json", "")
	wantError(t, "401", r, 401, "Permission denied")
	checkCommonHeaders(t, "401", r, true)

	// The CORS preflight needs no credentials and allows what it asks.
	r = n.DoAs(t, noAuth, "OPTIONS", "/hdr/x.json", "",
		"Origin", "https://app.example",
		"Access-Control-Request-Method", "PATCH",
		"Access-Control-Request-Headers", "authorization, x-firebase-etag, if-match, content-type")
	if r.Status != 200 && r.Status != 204 {
		t.Errorf("preflight: %d %q, want 200 or 204", r.Status, r.Body)
	}
	if r.Body != "" {
		t.Errorf("preflight body %q, want empty", r.Body)
	}
	if got := r.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("preflight Access-Control-Allow-Origin %q", got)
	}
	methods := strings.ToUpper(r.Header.Get("Access-Control-Allow-Methods"))
	for _, m := range []string{"GET", "PUT", "POST", "PATCH", "DELETE"} {
		if !strings.Contains(methods, m) {
			t.Errorf("preflight Access-Control-Allow-Methods %q lacks %s", methods, m)
		}
	}
	allowed := strings.ToLower(r.Header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"authorization", "x-firebase-etag", "if-match", "content-type"} {
		if !strings.Contains(allowed, h) {
			t.Errorf("preflight Access-Control-Allow-Headers %q lacks %s", allowed, h)
		}
	}
	// A preflight of a path without .json is answered too.
	if r := n.DoAs(t, noAuth, "OPTIONS", "/anything", "", "Origin", "https://app.example", "Access-Control-Request-Method", "GET"); r.Status != 200 && r.Status != 204 {
		t.Errorf("preflight without .json: %d %q", r.Status, r.Body)
	}
	wantResponse(t, "preflight wrote nothing", n.Do(t, "GET", "/hdr/x.json", ""), 200, "null")
}

// checkCommonHeaders checks SPEC §7's response headers; withType says
// whether the answer has a body whose Content-Type is JSON.
func checkCommonHeaders(t *testing.T, what string, r Response, withType bool) {
	t.Helper()
	want := map[string]string{"Cache-Control": "no-cache", "Access-Control-Allow-Origin": "*"}
	if withType {
		want["Content-Type"] = "application/json; charset=utf-8"
	}
	for h, v := range want {
		if got := r.Header.Get(h); got != v {
			t.Errorf("%s: %s %q, want %q", what, h, got, v)
		}
	}
}
