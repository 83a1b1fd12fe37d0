package httpapi

import (
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// TestServerValues checks timestamps from the injected clock and atomic
// increments (SPEC §2), in PUT, PATCH and POST bodies and their echoes.
func TestServerValues(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.run([]step{
		{name: "timestamp", req: req{method: "PUT", path: "/t.json", body: str(`{".sv":"timestamp"}`)},
			status: 200, body: "1700000000000", tree: `{"t":1700000000000}`},
		{name: "nested", req: req{method: "PUT", path: "/o.json",
			body: str(`{"at":{".sv":"timestamp"},"n":{".sv":{"increment":2}}}`)},
			status: 200, body: `{"at":1700000000000,"n":2}`},
		{name: "increment int", req: req{method: "PATCH", path: "/o.json", body: str(`{"n":{".sv":{"increment":3}}}`)},
			status: 200, body: `{"n":5}`},
		{name: "increment double", req: req{method: "PUT", path: "/o/n.json", body: str(`{".sv":{"increment":0.5}}`)},
			status: 200, body: `5.5`},
		{name: "increment a string", req: req{method: "PUT", path: "/o/at.json", body: str(`"x"`)}, status: 200, body: `"x"`},
		{name: "non-number becomes delta", req: req{method: "PUT", path: "/o/at.json", body: str(`{".sv":{"increment":-4}}`)},
			status: 200, body: `-4`, tree: `{"o":{"at":-4,"n":5.5},"t":1700000000000}`},
		{name: "int overflow goes double", req: req{method: "PUT", path: "/big.json", body: str(`9223372036854775807`)},
			status: 200, body: `9223372036854775807`},
		{name: "overflow", req: req{method: "PUT", path: "/big.json", body: str(`{".sv":{"increment":1}}`)},
			status: 200, body: `9223372036854776000.0`},
		{name: "push timestamp", req: req{method: "POST", path: "/log.json", body: str(`{"at":{".sv":"timestamp"}}`)},
			status: 200, body: `{"name":"` + pushKey(testNow.UnixMilli(), [12]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) + `"}`},
		{name: "read push", req: req{method: "GET", path: "/log.json"}, status: 200,
			body: `{"` + pushKey(testNow.UnixMilli(), [12]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}) + `":{"at":1700000000000}}`},
		{name: "unknown server value", req: req{method: "PUT", path: "/t.json", body: str(`{".sv":"now"}`)},
			status: 400, body: errBody(tree.MsgUnknownSV)},
		{name: "integers and doubles kept", req: req{method: "PUT", path: "/num.json", body: str(`[5,5.5,5.0,-0.25]`)},
			status: 200, body: `[5,5.5,5.0,-0.25]`},
	})
	if c := h.fsm.lastCommand(t); c.Now != testNow.UnixMilli() {
		t.Errorf("command Now %d, want the injected clock %d", c.Now, testNow.UnixMilli())
	}
}

// TestArrays checks the array rule (SPEC §1) on writes, echoes, reads and
// its absence under format=export.
func TestArrays(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.run([]step{
		{name: "array", req: req{method: "PUT", path: "/arr.json", body: str(`["a","b","c"]`)},
			status: 200, body: `["a","b","c"]`, tree: `{"arr":["a","b","c"]}`},
		{name: "export has no arrays", req: req{method: "GET", path: "/arr.json?format=export"},
			status: 200, body: `{"0":"a","1":"b","2":"c"}`},
		{name: "shallow array", req: req{method: "GET", path: "/arr.json?shallow=true"},
			status: 200, body: `{"0":true,"1":true,"2":true}`},
		{name: "nulls dropped", req: req{method: "PUT", path: "/arr.json", body: str(`[1,null,3]`)},
			status: 200, body: `[1,null,3]`},
		{name: "sparse", req: req{method: "DELETE", path: "/arr/0.json"}, status: 200, body: "null",
			tree: `{"arr":{"2":3}}`},
		{name: "object keys", req: req{method: "PUT", path: "/arr.json", body: str(`{"0":"x","1":"y"}`)},
			status: 200, body: `["x","y"]`},
		{name: "not canonical", req: req{method: "PUT", path: "/arr.json", body: str(`{"00":"x","1":"y"}`)},
			status: 200, body: `{"00":"x","1":"y"}`}, // "00" is the integer 0 in key order
		{name: "empty is absent", req: req{method: "PUT", path: "/arr.json", body: str(`[]`)},
			status: 200, body: `null`, tree: "null"},
	})
}

// TestPriorities checks .priority in bodies, /.priority.json paths and
// format=export (SPEC §2).
func TestPriorities(t *testing.T) {
	h := newHarness(t, nil, nil)
	h.run([]step{
		{name: "object with priority", req: req{method: "PUT", path: "/p.json", body: str(`{"a":1,".priority":5}`)},
			status: 200, body: `{"a":1}`, tree: `{"p":{"a":1}}`},
		{name: "read priority", req: req{method: "GET", path: "/p/.priority.json"}, status: 200, body: `5`},
		{name: "export", req: req{method: "GET", path: "/p.json?format=export"}, status: 200, body: `{".priority":5,"a":1}`},
		{name: "set priority alone", req: req{method: "PUT", path: "/p/.priority.json", body: str(`"high"`)},
			status: 200, body: `"high"`},
		{name: "export after", req: req{method: "GET", path: "/p.json?format=export"}, status: 200,
			body: `{".priority":"high","a":1}`},
		{name: "priority etag", req: req{method: "GET", path: "/p/.priority.json", headers: map[string]string{"X-Firebase-ETag": "true"}},
			status: 200, body: `"high"`, header: map[string]string{"ETag": tree.String("high").ETag()}},
		{name: "leaf with priority", req: req{method: "PUT", path: "/leaf.json", body: str(`{".value":"x",".priority":1.5}`)},
			status: 200, body: `"x"`},
		{name: "leaf export", req: req{method: "GET", path: "/leaf.json?format=export"}, status: 200,
			body: `{".value":"x",".priority":1.5}`},
		{name: "delete priority", req: req{method: "DELETE", path: "/p/.priority.json"}, status: 200, body: "null"},
		{name: "gone", req: req{method: "GET", path: "/p.json?format=export"}, status: 200, body: `{"a":1}`},
		{name: "absent priority", req: req{method: "GET", path: "/none/.priority.json"}, status: 200, body: "null"},
		{name: "post to a priority", req: req{method: "POST", path: "/p/.priority.json", body: str(`1`)},
			status: 400, body: errBody(tree.MsgInvalidToken)},
		{name: "patch a priority", req: req{method: "PATCH", path: "/p/.priority.json", body: str(`{"a":1}`)},
			status: 400, body: errBody(tree.MsgInvalidToken)},
		{name: "object priority", req: req{method: "PUT", path: "/p/.priority.json", body: str(`{"a":1}`)},
			status: 400, tree: `{"leaf":"x","p":{"a":1}}`,
			body: errBody("Invalid data; a priority must be a string, a number or null")},
	})
}
