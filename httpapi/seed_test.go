package httpapi

import (
	"net/http"
	"testing"
)

// TestSeedDocument walks every row of the seed interface document
// (shared/seed/000_3af9af630318cbd6.txt) in one sequence, checking each
// answer and the whole tree after it.
func TestSeedDocument(t *testing.T) {
	h := newHarness(t, nil, nil)
	ms := testNow.UnixMilli()
	key1 := pushKey(ms, [12]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	// Same millisecond: the previous random part plus one (SPEC §2).
	key2 := pushKey(ms, [12]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12})
	if !(key1 < key2) {
		t.Fatalf("push keys out of order: %s %s", key1, key2)
	}
	jack := `{"age":30,"name":{"first":"Jack","last":"Sparrow"}}`
	h.run([]step{
		// §1, §4.1: a missing node reads as null.
		{name: "empty root", req: req{method: "GET", path: "/.json"}, status: 200, body: "null", tree: "null"},
		// §4.2: PUT writes and answers the data written.
		{name: "put", req: req{method: "PUT", path: "/users/jack.json",
			body: str(`{"name": {"first": "Jack", "last": "Sparrow"}, "age": 30}`)},
			status: 200, body: jack, tree: `{"users":{"jack":` + jack + `}}`},
		// §2 Node addressing: <path>.json, <path>/.json, empty segments.
		{name: "get", req: req{method: "GET", path: "/users/jack.json"}, status: 200, body: jack},
		{name: "get slash form", req: req{method: "GET", path: "/users/jack/.json"}, status: 200, body: jack},
		{name: "get empty segments", req: req{method: "GET", path: "//users//jack.json"}, status: 200, body: jack},
		{name: "get leaf", req: req{method: "GET", path: "/users/jack/name/first.json"}, status: 200, body: `"Jack"`},
		// §4.2: the node is cleared first.
		{name: "put replaces", req: req{method: "PUT", path: "/users/jack.json", body: str(`{"name":{"first":"Jack"}}`)},
			status: 200, body: `{"name":{"first":"Jack"}}`, tree: `{"users":{"jack":{"name":{"first":"Jack"}}}}`},
		// §4.3: POST answers the generated name; the body is JSON whatever
		// the Content-Type says.
		{name: "post form-encoded", req: req{method: "POST", path: "/messages.json", body: str(`{"text":"hi"}`),
			headers: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}},
			status: 200, body: `{"name":"` + key1 + `"}`,
			tree: `{"messages":{"` + key1 + `":{"text":"hi"}},"users":{"jack":{"name":{"first":"Jack"}}}}`},
		{name: "post again", req: req{method: "POST", path: "/messages.json", body: str(`"second"`)},
			status: 200, body: `{"name":"` + key2 + `"}`},
		// Keys sort in the order they were added.
		{name: "read pushes", req: req{method: "GET", path: "/messages.json"}, status: 200,
			body: `{"` + key1 + `":{"text":"hi"},"` + key2 + `":"second"}`},
		// §4.4: PATCH creates and updates named children, leaves the others.
		{name: "patch", req: req{method: "PATCH", path: "/users/jack.json", body: str(`{"age":31,"name/last":"Sparrow"}`)},
			status: 200, body: `{"age":31,"name/last":"Sparrow"}`,
			tree: `{"messages":{"` + key1 + `":{"text":"hi"},"` + key2 + `":"second"},` +
				`"users":{"jack":{"age":31,"name":{"first":"Jack","last":"Sparrow"}}}}`},
		{name: "multi-path patch", req: req{method: "PATCH", path: "/users.json",
			body: str(`{"jack/name/first":"Captain","bob/name/first":"Bob"}`)},
			status: 200, body: `{"jack/name/first":"Captain","bob/name/first":"Bob"}`},
		{name: "after multi-path", req: req{method: "GET", path: "/users.json"}, status: 200,
			body: `{"bob":{"name":{"first":"Bob"}},"jack":{"age":31,"name":{"first":"Captain","last":"Sparrow"}}}`},
		{name: "patch updates and deletes", req: req{method: "PATCH", path: "/users.json",
			body: str(`{"bob":null,"jack/age":32}`)},
			// The echo is a tree node, which cannot hold null: deleted
			// fields are left out of it.
			status: 200, body: `{"bob":null,"jack/age":32}`},
		{name: "after mixed", req: req{method: "GET", path: "/users.json"}, status: 200,
			body: `{"jack":{"age":32,"name":{"first":"Captain","last":"Sparrow"}}}`},
		// A nested object replaces the child wholesale.
		{name: "nested object pitfall", req: req{method: "PATCH", path: "/users.json",
			body: str(`{"jack":{"name":{"first":"J"}}}`)},
			status: 200, body: `{"jack":{"name":{"first":"J"}}}`},
		{name: "after pitfall", req: req{method: "GET", path: "/users.json"}, status: 200,
			body: `{"jack":{"name":{"first":"J"}}}`},
		// §4.5: DELETE answers null; the emptied parent disappears.
		{name: "delete", req: req{method: "DELETE", path: "/users/jack.json"}, status: 200, body: "null",
			tree: `{"messages":{"` + key1 + `":{"text":"hi"},"` + key2 + `":"second"}}`},
		// §4.6: method override, header and query forms.
		{name: "override header", req: req{method: "POST", path: "/messages/" + key2 + ".json",
			headers: map[string]string{"X-HTTP-Method-Override": "DELETE"}},
			status: 200, body: "null", tree: `{"messages":{"` + key1 + `":{"text":"hi"}}}`},
		{name: "override query", req: req{method: "POST", path: "/messages/" + key1 + ".json?x-http-method-override=DELETE"},
			status: 200, body: "null", tree: "null"},
	})
}

// TestMethodOverride checks every override target, in both forms and any
// case, and the refusal of other values and methods.
func TestMethodOverride(t *testing.T) {
	h := newHarness(t, nil, nil)
	over := func(v string) map[string]string { return map[string]string{"X-HTTP-Method-Override": v} }
	h.run([]step{
		{name: "put", req: req{method: "POST", path: "/a.json", headers: over("put"), body: str(`{"b":1}`)},
			status: 200, body: `{"b":1}`, tree: `{"a":{"b":1}}`},
		{name: "patch", req: req{method: "POST", path: "/a.json?x-http-method-override=Patch", body: str(`{"c":2}`)},
			status: 200, body: `{"c":2}`, tree: `{"a":{"b":1,"c":2}}`},
		{name: "get", req: req{method: "POST", path: "/a.json", headers: over("GET"), body: str(`ignored`)},
			status: 200, body: `{"b":1,"c":2}`, tree: `{"a":{"b":1,"c":2}}`},
		{name: "get query", req: req{method: "POST", path: "/a/b.json?x-http-method-override=get"},
			status: 200, body: `1`},
		{name: "post", req: req{method: "POST", path: "/x.json", headers: over("POST"), body: str(`1`)},
			status: 200, body: `{"name":"` + pushKey(testNow.UnixMilli(), [12]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) + `"}`},
		{name: "delete", req: req{method: "POST", path: "/x.json", headers: over("delete")},
			status: 200, body: `null`, tree: `{"a":{"b":1,"c":2}}`},
		{name: "conflicting header and query", req: req{method: "POST", path: "/a/c.json?x-http-method-override=DELETE",
			headers: over("GET")}, status: 400,
			body: errBody("Conflicting method overrides: the X-HTTP-Method-Override header and the x-http-method-override query parameter differ"),
			tree: `{"a":{"b":1,"c":2}}`},
		{name: "header and query agree", req: req{method: "POST", path: "/a/c.json?x-http-method-override=get",
			headers: over("GET")}, status: 200, body: `2`, tree: `{"a":{"b":1,"c":2}}`},
		{name: "bad value", req: req{method: "POST", path: "/a.json", headers: over("TRACE"), body: str(`1`)},
			status: 400, body: errBody("Invalid method override: X-HTTP-Method-Override must be GET, PUT, POST, PATCH or DELETE"),
			tree: `{"a":{"b":1,"c":2}}`},
		{name: "bad query value", req: req{method: "POST", path: "/a.json?x-http-method-override=OPTIONS", body: str(`1`)},
			status: 400, body: errBody("Invalid method override: X-HTTP-Method-Override must be GET, PUT, POST, PATCH or DELETE")},
		// Only a POST carries an override.
		{name: "ignored on PUT", req: req{method: "PUT", path: "/a/b.json", headers: over("DELETE"), body: str(`5`)},
			status: 200, body: `5`, tree: `{"a":{"b":5,"c":2}}`},
		{name: "other method", req: req{method: "TRACE", path: "/a.json"}, status: 400, body: errBody("Invalid method")},
		{name: "head", req: req{method: http.MethodHead, path: "/a.json"}, status: 400, body: ""},
	})
}
