package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/db"
	"google.golang.org/api/option"
)

// rewriteTransport sends the SDK's https requests to the loopback test
// server and adds a bearer token, as an application wrapping its own
// transport does (see reference/firebase-rest.md §13.1).
type rewriteTransport struct {
	target *url.URL
	token  string
}

func (rt rewriteTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = rt.target.Scheme, rt.target.Host, rt.target.Host
	if rt.token != "" {
		r.Header.Set("Authorization", "Bearer "+rt.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// adminClient is a firebase-admin-go database client talking to h.
func adminClient(t *testing.T, h *harness, token string) *db.Client {
	t.Helper()
	target, err := url.Parse(h.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	app, err := firebase.NewApp(ctx, &firebase.Config{DatabaseURL: "https://arbor.example/", ProjectID: "arbor-test"},
		option.WithHTTPClient(&http.Client{Transport: rewriteTransport{target: target, token: token}}))
	if err != nil {
		t.Fatalf("NewApp: %v", err)
	}
	c, err := app.Database(ctx)
	if err != nil {
		t.Fatalf("Database: %v", err)
	}
	return c
}

// TestFirebaseAdminGo drives the server with the unmodified official Go
// SDK: the calls of reference §13.1, including Transaction.
func TestFirebaseAdminGo(t *testing.T) {
	h := newHarness(t, nil, nil)
	c := adminClient(t, h, adminSecret)
	ctx := context.Background()
	users := c.NewRef("users")

	if err := users.Child("jack").Set(ctx, map[string]any{"name": "Jack", "age": 30}); err != nil {
		t.Fatalf("Set: %v", err)
	}
	var jack map[string]any
	if err := users.Child("jack").Get(ctx, &jack); err != nil || jack["name"] != "Jack" || jack["age"] != float64(30) {
		t.Fatalf("Get: %v %v", jack, err)
	}
	if err := users.Update(ctx, map[string]any{"jack/age": 31, "jill/name": "Jill"}); err != nil {
		t.Fatalf("Update: %v", err)
	}
	pushed, err := c.NewRef("log").Push(ctx, "entry")
	if err != nil || len(pushed.Key) != 20 {
		t.Fatalf("Push: %v %v", pushed, err)
	}
	empty, err := c.NewRef("log").Push(ctx, nil) // the SDK sends "" for nil
	if err != nil || !(pushed.Key < empty.Key) {
		t.Fatalf("second Push: %v %v", empty, err)
	}
	var shallow map[string]bool
	if err := users.GetShallow(ctx, &shallow); err != nil || !shallow["jack"] || !shallow["jill"] {
		t.Fatalf("GetShallow: %v %v", shallow, err)
	}
	var age int
	etag, err := users.Child("jack/age").GetWithETag(ctx, &age)
	if err != nil || age != 31 || etag == "" {
		t.Fatalf("GetWithETag: %d %q %v", age, etag, err)
	}
	changed, _, err := users.Child("jack/age").GetIfChanged(ctx, etag, &age)
	if err != nil || changed {
		t.Fatalf("GetIfChanged(current): %v %v", changed, err)
	}
	ok, err := users.Child("jack/age").SetIfUnchanged(ctx, "stale", 99)
	if err != nil || ok {
		t.Fatalf("SetIfUnchanged(stale): %v %v", ok, err)
	}
	// Transaction against a concurrent writer: the first attempt fails
	// with 412 and the SDK retries from the 412's body and ETag.
	raced := false
	err = users.Child("jack/age").Transaction(ctx, func(n db.TransactionNode) (any, error) {
		var v int
		if err := n.Unmarshal(&v); err != nil {
			return nil, err
		}
		if !raced {
			raced = true
			if err := users.Child("jack/age").Set(ctx, 40); err != nil {
				return nil, err
			}
		}
		return v + 1, nil
	})
	if err != nil {
		t.Fatalf("Transaction: %v", err)
	}
	if err := users.Child("jack/age").Get(ctx, &age); err != nil || age != 41 {
		t.Fatalf("after Transaction: %d %v", age, err)
	}
	changed, _, err = users.Child("jack/age").GetIfChanged(ctx, etag, &age)
	if err != nil || !changed || age != 41 {
		t.Fatalf("GetIfChanged(old): %v %d %v", changed, age, err)
	}
	if err := c.NewRef("d d/é").Set(ctx, true); err != nil {
		t.Fatalf("Set with escaped path: %v", err)
	}
	if err := users.Update(ctx, map[string]any{"jill": nil}); err != nil {
		t.Fatalf("Update deleting: %v", err)
	}
	if err := c.NewRef("log").Delete(ctx); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	want := `{"d d":{"é":true},"users":{"jack":{"age":41,"name":"Jack"}}}`
	if got := h.tree(); got != want {
		t.Errorf("tree %s, want %s", got, want)
	}
	var root map[string]any
	if err := c.NewRef("/").Get(ctx, &root); err != nil || len(root) != 2 {
		t.Errorf("root Get: %v %v", root, err)
	}

	// Without credentials the SDK sees Firebase's 401.
	anon := adminClient(t, h, "")
	var v any
	err = anon.NewRef("users").Get(ctx, &v)
	if err == nil || !strings.Contains(err.Error(), "http error status: 401; reason: Permission denied") {
		t.Errorf("anonymous Get: %v", err)
	}
	var first map[string]map[string]any
	if err := users.OrderByKey().LimitToFirst(1).Get(ctx, &first); err != nil || len(first) != 1 || first["jack"]["name"] != "Jack" {
		t.Errorf("query: %v %v", first, err)
	}
}
