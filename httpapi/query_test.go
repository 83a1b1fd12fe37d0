package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// queryFixture is testdata/dinosaurs.json, the query conformance
// fixture shared with the end-to-end tests.
type queryFixture struct {
	Data  json.RawMessage `json:"data"`
	Cases []struct {
		Name  string   `json:"name"`
		Path  string   `json:"path"`
		Query string   `json:"query"`
		Keys  []string `json:"keys"`
		Body  *string  `json:"body"`
		Error string   `json:"error"`
	} `json:"cases"`
}

func loadQueryFixture(t testing.TB) queryFixture {
	t.Helper()
	raw, err := os.ReadFile("testdata/dinosaurs.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx queryFixture
	if err := json.Unmarshal(raw, &fx); err != nil {
		t.Fatal(err)
	}
	return fx
}

// encodeQuery re-encodes a fixture query the way clients send it (every
// reserved character percent-encoded, so `5,"k"` travels as 5%2C%22k%22).
func encodeQuery(t *testing.T, query string) string {
	t.Helper()
	v, err := url.ParseQuery(query)
	if err != nil {
		t.Fatalf("fixture query %q: %v", query, err)
	}
	return v.Encode()
}

// childPath is the URL path of key below path.
func childPath(path, key string) string {
	return strings.TrimSuffix(path, "/") + "/" + url.PathEscape(key)
}

// TestQueryFixture runs every case of the query fixture through the HTTP
// handler: exact status and body. A keys case expects an object of those
// children in that order, each exactly as a plain GET of the child reads.
func TestQueryFixture(t *testing.T) {
	fx := loadQueryFixture(t)
	h := newHarness(t, nil, nil)
	if r := h.do(req{method: "PUT", path: "/.json?print=silent", body: str(string(fx.Data))}); r.status != 204 {
		t.Fatalf("PUT fixture: %d %s", r.status, r.body)
	}
	for _, tc := range fx.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			r := h.get(tc.Path + ".json?" + encodeQuery(t, tc.Query))
			status, want := 200, ""
			switch {
			case tc.Error != "":
				status, want = 400, errBody(tc.Error)
			case tc.Body != nil:
				want = *tc.Body
			default:
				parts := make([]string, len(tc.Keys))
				for i, k := range tc.Keys {
					quoted, _ := json.Marshal(k)
					parts[i] = string(quoted) + ":" + h.get(childPath(tc.Path, k)+".json").body
				}
				want = "{" + strings.Join(parts, ",") + "}"
			}
			if r.status != status || r.body != want {
				t.Errorf("GET %s?%s: %d\n got %s\nwant %s", tc.Path, tc.Query, r.status, r.body, want)
			}
		})
	}
}

// TestQueryResponses checks what the HTTP layer adds to a query: the
// output parameters, priority paths, headers and the refusals.
func TestQueryResponses(t *testing.T) {
	h := newHarness(t, nil, nil)
	const scores = `{"a":3,"b":1,"c":2}`
	h.run([]step{
		{name: "seed", req: req{method: "PUT", path: "/s.json", body: str(scores)}, status: 200, body: scores},
		{name: "query order", req: req{method: "GET", path: `/s.json?orderBy=%22$value%22`}, status: 200,
			body: `{"b":1,"c":2,"a":3}`},
		{name: "silent", req: req{method: "GET", path: `/s.json?orderBy=%22$value%22&print=silent`}, status: 204, body: ""},
		{name: "pretty", req: req{method: "GET", path: `/s.json?orderBy=%22$value%22&limitToLast=2&print=pretty`}, status: 200,
			body: "{\n  \"c\" : 2,\n  \"a\" : 3\n}"},
		{name: "callback and download", req: req{method: "GET", path: `/s.json?orderBy=%22$value%22&limitToFirst=1&callback=cb&download=q.json`},
			status: 200, body: `cb({"b":1});`,
			header: map[string]string{"Content-Type": jsContentType, "Content-Disposition": `attachment; filename="q.json"`}},
		{name: "no ETag on a query", req: req{method: "GET", path: `/s.json?orderBy=%22$key%22`, headers: map[string]string{"X-Firebase-ETag": "true"}},
			status: 200, body: scores, header: map[string]string{"ETag": ""}},
		{name: "local consistency", req: req{method: "GET", path: `/s.json?orderBy=%22$key%22&limitToLast=1&consistency=local`},
			status: 200, body: `{"c":2}`},
		{name: "priority path", req: req{method: "PUT", path: "/p.json", body: str(`{"x":1,".priority":7}`)}, status: 200, body: `{"x":1}`},
		{name: "query on a priority", req: req{method: "GET", path: `/p/.priority.json?orderBy=%22$value%22`}, status: 200, body: `7`},
		{name: "export keeps the priority when nothing is filtered", req: req{method: "GET", path: `/p.json?orderBy=%22$key%22&format=export`},
			status: 200, body: `{".priority":7,"x":1}`},
		{name: "export of a filtered result", req: req{method: "GET", path: `/p.json?orderBy=%22$key%22&limitToFirst=1&format=export`},
			status: 200, body: `{"x":1}`},
		{name: "orderBy on PUT", req: req{method: "PUT", path: `/s.json?orderBy=%22a%22`, body: str(`1`)}, status: 400,
			body: errBody("Query parameter orderBy is only supported on GET requests"), tree: `{"p":{"x":1},"s":{"a":3,"b":1,"c":2}}`},
		{name: "limit on DELETE", req: req{method: "DELETE", path: `/s.json?limitToFirst=1`}, status: 400,
			body: errBody("Query parameter limitToFirst is only supported on GET requests")},
		{name: "repeated orderBy", req: req{method: "GET", path: `/s.json?orderBy=%22a%22&orderBy=%22b%22`}, status: 400,
			body: errBody("Query parameter orderBy may be given only once")},
		{name: "shallow=false is no shallow", req: req{method: "GET", path: `/s.json?shallow=false&limitToFirst=1`}, status: 400,
			body: errBody(MsgOrderByRequired)},
		{name: "streaming first", req: req{method: "GET", path: `/s.json?orderBy=5`, headers: map[string]string{"Accept": "text/event-stream"}},
			status: 400, body: errBody(MsgOrderByJSON)},
	})
}

// TestQueryShallowPaging lists a node the way firebase-tools does
// (listRemote: shallow=true&limitToFirst=N&startAfter=<raw last key>),
// and must see every key once, in key order.
func TestQueryShallowPaging(t *testing.T) {
	h := newHarness(t, nil, nil)
	body := `{"b":1,"a":2,"10":3,"9":4,"007":5,"7":0,"-Nx":6,"é":7,"c d":8,"e+f":9}`
	if r := h.do(req{method: "PUT", path: "/l.json", body: str(body)}); r.status != 200 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	want := []string{"7", "007", "9", "10", "-Nx", "a", "b", "c d", "e+f", "é"}
	var got []string
	last := ""
	for page := 0; page < 10; page++ {
		q := url.Values{"shallow": {"true"}, "limitToFirst": {"2"}, "timeout": {"5000ms"}}
		if last != "" {
			q.Set("startAfter", last)
		}
		r := h.get("/l.json?" + q.Encode())
		if r.status != 200 {
			t.Fatalf("page %d: %d %s", page, r.status, r.body)
		}
		if r.body == "null" {
			break
		}
		dec := json.NewDecoder(strings.NewReader(r.body))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			t.Fatalf("page %d: %s", page, r.body)
		}
		for dec.More() {
			key, _ := dec.Token()
			if v, _ := dec.Token(); v != true {
				t.Fatalf("page %d: %s", page, r.body)
			}
			got = append(got, key.(string))
			last = key.(string)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("paged keys %q, want %q", got, want)
	}
}

// TestQueryTimeout: a read that uses up ?timeout= leaves no time for the
// scan, and the query is refused with the timeout's 400, not a 5xx.
func TestQueryTimeout(t *testing.T) {
	// More children than Eval visits between looks at its context.
	var sb strings.Builder
	sb.WriteByte('{')
	for i := 0; i < 20_000; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"k%05d":{"v":%d}`, i, i)
	}
	sb.WriteByte('}')
	big, err := tree.ParseBody([]byte(sb.String()), tree.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	db := &fakeDB{read: func(ctx context.Context, _ fsm.Read) (fsm.ReadResult, error) {
		<-ctx.Done() // the read finishes exactly at the client's deadline
		return fsm.ReadResult{Value: big}, nil
	}}
	h := newHarness(t, db, nil)
	r := h.get(`/big.json?orderBy=%22v%22&limitToFirst=1&timeout=20ms`)
	if r.status != 400 || r.body != errBody("The read did not finish within the requested timeout") {
		t.Errorf("timed-out query: %d %s", r.status, r.body)
	}
}
