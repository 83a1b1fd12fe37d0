package httpapi

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/arbordb/arbor/httpapi/idtoken"
)

// indexedRules declare an index for everything the query fixture orders
// by, and let signed-in users read /dinosaurs only.
const indexedRules = `{
  "rules": {
    "$loc": {".indexOn": [".value", "height", "order", "nonexistent", "ratings/pos", "appeared", "weight", "v"]},
    "dinosaurs": {".read": "auth != null", ".indexOn": ["height", "order", "nonexistent", "ratings/pos", "appeared", "weight"]}
  }
}`

// indexErrBody is the 400 body of a query without its index.
func indexErrBody(child, path string) string {
	msg, _ := json.Marshal(`Index not defined, add ".indexOn": "` + child + `", for path "` + path + `", to the rules`)
	return "{\n  \"error\" : " + string(msg) + "\n}\n"
}

// TestIndexedQueriesOverREST runs every fixture query on a server whose
// rules index what it orders by: the answers are those of a server that
// scans.
func TestIndexedQueriesOverREST(t *testing.T) {
	fx := loadQueryFixture(t)
	scan := newHarness(t, nil, nil)
	indexed := newHarness(t, nil, nil)
	for _, h := range []*harness{scan, indexed} {
		if r := h.do(req{method: "PUT", path: "/.json?print=silent", body: str(string(fx.Data))}); r.status != 204 {
			t.Fatalf("PUT fixture: %d %s", r.status, r.body)
		}
	}
	if r := indexed.do(req{method: "PUT", path: "/.settings/rules.json", body: str(indexedRules)}); r.status != 200 {
		t.Fatalf("PUT rules: %d %s", r.status, r.body)
	}
	if n := indexed.fsm.f.ReadLocal(nil).Indexes.Len(); n < 10 {
		t.Fatalf("%d indexes", n)
	}
	for _, tc := range fx.Cases {
		path := tc.Path + ".json?" + encodeQuery(t, tc.Query)
		want, got := scan.get(path), indexed.get(path)
		if got.status != want.status || got.body != want.body {
			t.Errorf("%s: GET %s: %d %s, scanning %d %s", tc.Name, path, got.status, got.body, want.status, want.body)
		}
	}
}

// TestStrictIndexes checks --strict-indexes: a query by a child or by
// value whose index the rules in force do not declare at its path is
// Firebase's 400; one by key or priority needs none; a reader the rules
// refuse is refused first. Without the setting such queries scan.
func TestStrictIndexes(t *testing.T) {
	v, err := idtoken.New(idtoken.Config{HS256Secrets: [][]byte{[]byte(jwtSecret)}, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, nil, func(c *Config) { c.Tokens, c.StrictIndexes = v, true })
	alice := userToken(t, "alice", testNow.Add(time.Hour))
	const dinos = `{"a":{"height":3,"length":1},"b":{"height":1,"length":2},"c":{"height":2,"length":3}}`
	byHeight := `/dinosaurs.json?orderBy=` + url.QueryEscape(`"height"`)
	h.run([]step{
		{name: "seed", req: req{method: "PUT", path: "/dinosaurs.json?print=silent", body: str(dinos)}, status: 204},
		{name: "default rules declare no index", req: req{method: "GET", path: byHeight}, status: 400,
			body: indexErrBody("height", "/dinosaurs")},
		{name: "rules", req: req{method: "PUT", path: "/.settings/rules.json", body: str(indexedRules)}, status: 200,
			body: `{"status":"ok"}`},
		{name: "indexed", req: req{method: "GET", path: byHeight + "&startAt=2&limitToFirst=1"}, status: 200,
			body: `{"c":{"height":2,"length":3}}`},
		{name: "indexed, last", req: req{method: "GET", path: byHeight + "&limitToLast=2"}, status: 200,
			body: `{"c":{"height":2,"length":3},"a":{"height":3,"length":1}}`},
		{name: "not indexed", req: req{method: "GET", path: `/dinosaurs.json?orderBy="length"`}, status: 400,
			body: indexErrBody("length", "/dinosaurs")},
		{name: "trailing slash", req: req{method: "GET", path: `/dinosaurs/.json?orderBy=%22length%22&limitToFirst=1`}, status: 400,
			body: indexErrBody("length", "/dinosaurs")},
		{name: "child path", req: req{method: "GET", path: `/dinosaurs.json?orderBy=%22a%2Fb%22`}, status: 400,
			body: indexErrBody("a/b", "/dinosaurs")},
		{name: "by value", req: req{method: "GET", path: `/dinosaurs.json?orderBy=%22$value%22`}, status: 400,
			body: indexErrBody(".value", "/dinosaurs")},
		{name: "by value below a wildcard", req: req{method: "GET", path: `/other.json?orderBy=%22$value%22`}, status: 200, body: "null"},
		{name: "at the root", req: req{method: "GET", path: `/.json?orderBy=%22height%22`}, status: 400,
			body: indexErrBody("height", "/")},
		{name: "by key", req: req{method: "GET", path: `/dinosaurs.json?orderBy=%22$key%22&limitToFirst=1`}, status: 200,
			body: `{"a":{"height":3,"length":1}}`},
		{name: "by priority", req: req{method: "GET", path: `/dinosaurs.json?orderBy=%22$priority%22&limitToFirst=1`}, status: 200,
			body: `{"a":{"height":3,"length":1}}`},
		{name: "a user, indexed", req: req{method: "GET", path: byHeight + "&limitToFirst=1&auth=" + alice, anon: true}, status: 200,
			body: `{"b":{"height":1,"length":2}}`},
		{name: "permission first", req: req{method: "GET", path: `/dinosaurs.json?orderBy="length"`, anon: true}, status: 401,
			body: errBody("Permission denied")},
		{name: "an index follows writes", req: req{method: "PATCH", path: "/dinosaurs.json?print=silent", body: str(`{"a/height":0,"d":{"height":1}}`)},
			status: 204},
		{name: "after the write", req: req{method: "GET", path: byHeight + "&endAt=1"}, status: 200,
			body: `{"a":{"height":0,"length":1},"b":{"height":1,"length":2},"d":{"height":1}}`},
	})
	lax := newHarness(t, h.fsm, nil)
	lax.run([]step{
		{name: "without strict indexes", req: req{method: "GET", path: `/dinosaurs.json?orderBy=%22length%22&limitToLast=1`}, status: 200,
			body: `{"c":{"height":2,"length":3}}`},
	})
}

// TestQueryWhileIndexBuilds: a query of an index the rules declare but
// that is not built yet scans, and answers exactly what it answers from
// the index once built.
func TestQueryWhileIndexBuilds(t *testing.T) {
	fx := loadQueryFixture(t)
	db := newFSMDB()
	db.holdIndexes = true
	h := newHarness(t, db, nil)
	if r := h.do(req{method: "PUT", path: "/.json?print=silent", body: str(string(fx.Data))}); r.status != 204 {
		t.Fatalf("PUT fixture: %d %s", r.status, r.body)
	}
	if r := h.do(req{method: "PUT", path: "/.settings/rules.json", body: str(indexedRules)}); r.status != 200 {
		t.Fatalf("PUT rules: %d %s", r.status, r.body)
	}
	if ixs := db.f.ReadLocal(nil).Indexes; !ixs.Pending() || ixs.Len() != 0 {
		t.Fatalf("indexes built by the rules' write: pending %v, %d", ixs.Pending(), ixs.Len())
	}
	var paths []string
	building := map[string]response{}
	for _, tc := range fx.Cases {
		path := tc.Path + ".json?" + encodeQuery(t, tc.Query)
		paths = append(paths, path)
		building[path] = h.get(path)
	}
	if err := db.f.BuildIndexes(context.Background()); err != nil {
		t.Fatal(err)
	}
	if ixs := db.f.ReadLocal(nil).Indexes; ixs.Pending() || ixs.Len() < 10 {
		t.Fatalf("after the build: pending %v, %d indexes", ixs.Pending(), ixs.Len())
	}
	for _, path := range paths {
		want, got := building[path], h.get(path)
		if got.status != want.status || got.body != want.body {
			t.Errorf("GET %s: %d %s once built, %d %s while building", path, got.status, got.body, want.status, want.body)
		}
	}
}
