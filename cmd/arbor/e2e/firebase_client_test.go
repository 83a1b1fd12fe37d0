package e2e

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	firebase "firebase.google.com/go/v4"
	"firebase.google.com/go/v4/db"
	"google.golang.org/api/option"
)

// bearerTransport adds "Authorization: Bearer <token>" to every request.
// option.WithHTTPClient makes the SDK use a client as is, without its own
// credentials (reference/firebase-rest.md §13.1), so a client that wants
// to authenticate wraps its transport like this.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// firebaseClient is an unmodified firebase-admin-go database client for n,
// authenticated with token (none if empty), reaching the node at
// https://localhost:<port> over TLS that trusts the node's certificate.
func firebaseClient(t *testing.T, n *Node, token string) *db.Client {
	t.Helper()
	_, port, ok := strings.Cut(n.Addr(), ":")
	if !ok {
		t.Fatalf("address %q has no port", n.Addr())
	}
	base := n.PooledClient(t, 32)
	hc := &http.Client{Timeout: requestTimeout, Transport: bearerTransport{token: token, base: base.Transport}}
	ctx := context.Background()
	app, err := firebase.NewApp(ctx, &firebase.Config{DatabaseURL: "https://localhost:" + port, ProjectID: "arbor-e2e"},
		option.WithHTTPClient(hc))
	if err != nil {
		t.Fatalf("firebase.NewApp: %v", err)
	}
	c, err := app.Database(ctx)
	if err != nil {
		t.Fatalf("app.Database: %v", err)
	}
	return c
}

// TestFirebaseAdminGo uses the official Go Admin SDK as the referee: every
// call must behave as it does against Firebase.
func TestFirebaseAdminGo(t *testing.T) {
	n := StartReadyNode(t, Options{})
	c := firebaseClient(t, n, AdminSecret)
	ctx := context.Background()

	t.Run("SetGetUpdateDelete", func(t *testing.T) {
		users := c.NewRef("sdk/users")
		if err := users.Child("jack").Set(ctx, map[string]any{"name": "Jack", "age": 30, "tags": []string{"a", "b"}}); err != nil {
			t.Fatalf("Set: %v", err)
		}
		var jack struct {
			Name string   `json:"name"`
			Age  int      `json:"age"`
			Tags []string `json:"tags"`
		}
		if err := users.Child("jack").Get(ctx, &jack); err != nil || jack.Name != "Jack" || jack.Age != 30 || len(jack.Tags) != 2 || jack.Tags[1] != "b" {
			t.Fatalf("Get: %+v %v", jack, err)
		}
		wantResponse(t, "raw GET after Set", n.Do(t, "GET", "/sdk/users/jack.json", ""), 200, `{"age":30,"name":"Jack","tags":["a","b"]}`)

		// Multi-path Update with nil deleting.
		if err := users.Child("jill").Set(ctx, map[string]any{"name": "Jill", "temp": true}); err != nil {
			t.Fatalf("Set jill: %v", err)
		}
		if err := users.Update(ctx, map[string]any{"jack/age": 31, "jill/temp": nil, "jill/nick": "J", "bob": map[string]any{"name": "Bob"}}); err != nil {
			t.Fatalf("Update: %v", err)
		}
		wantResponse(t, "after Update", n.Do(t, "GET", "/sdk/users.json", ""), 200,
			`{"bob":{"name":"Bob"},"jack":{"age":31,"name":"Jack","tags":["a","b"]},"jill":{"name":"Jill","nick":"J"}}`)

		var shallow map[string]bool
		if err := users.GetShallow(ctx, &shallow); err != nil || len(shallow) != 3 || !shallow["jack"] || !shallow["jill"] || !shallow["bob"] {
			t.Errorf("GetShallow: %v %v", shallow, err)
		}

		if err := users.Child("bob").Delete(ctx); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		var bob map[string]any
		if err := users.Child("bob").Get(ctx, &bob); err != nil || bob != nil {
			t.Errorf("Get deleted: %v %v", bob, err)
		}

		// Percent-encoded paths, and the root.
		odd := c.NewRef("sdk/d d/é")
		if err := odd.Set(ctx, "accent"); err != nil {
			t.Fatalf("Set d d/é: %v", err)
		}
		wantResponse(t, "raw GET of d d/é", n.Do(t, "GET", "/sdk/d%20d.json", ""), 200, `{"é":"accent"}`)
		var root map[string]any
		if err := c.NewRef("/").Get(ctx, &root); err != nil || root["sdk"] == nil {
			t.Errorf("Get root: %v %v", root, err)
		}
	})

	t.Run("Push", func(t *testing.T) {
		list := c.NewRef("sdk/list")
		var keys []string
		for i, v := range []any{"first", map[string]any{"n": 2}, nil} {
			ref, err := list.Push(ctx, v)
			if err != nil {
				t.Fatalf("Push %d: %v", i, err)
			}
			if !validPushKey(ref.Key) || (len(keys) > 0 && ref.Key <= keys[len(keys)-1]) {
				t.Errorf("Push %d: key %q after %q", i, ref.Key, keys)
			}
			keys = append(keys, ref.Key)
		}
		wantResponse(t, "after Push", n.Do(t, "GET", "/sdk/list.json", ""), 200,
			`{"`+keys[0]+`":"first","`+keys[1]+`":{"n":2},"`+keys[2]+`":""}`)
	})

	t.Run("ETags", func(t *testing.T) {
		ref := c.NewRef("sdk/etag")
		if err := ref.Set(ctx, map[string]any{"v": 1}); err != nil {
			t.Fatalf("Set: %v", err)
		}
		var v map[string]int
		etag, err := ref.GetWithETag(ctx, &v)
		if err != nil || etag == "" || v["v"] != 1 {
			t.Fatalf("GetWithETag: %v %q %v", v, etag, err)
		}

		// GetIfChanged: unchanged, then changed.
		var got map[string]int
		changed, tag, err := ref.GetIfChanged(ctx, etag, &got)
		if err != nil || changed || tag != etag || got != nil {
			t.Errorf("GetIfChanged unchanged: %v %q %v %v", changed, tag, got, err)
		}
		changed, tag, err = ref.GetIfChanged(ctx, "stale-etag", &got)
		if err != nil || !changed || tag != etag || got["v"] != 1 {
			t.Errorf("GetIfChanged changed: %v %q %v %v", changed, tag, got, err)
		}

		// SetIfUnchanged: true with the current ETag, false with a stale one.
		ok, err := ref.SetIfUnchanged(ctx, etag, map[string]any{"v": 2})
		if err != nil || !ok {
			t.Fatalf("SetIfUnchanged current: %v %v", ok, err)
		}
		ok, err = ref.SetIfUnchanged(ctx, etag, map[string]any{"v": 3})
		if err != nil || ok {
			t.Errorf("SetIfUnchanged stale: %v %v", ok, err)
		}
		var now map[string]int
		newTag, err := ref.GetWithETag(ctx, &now)
		if err != nil || now["v"] != 2 || newTag == etag {
			t.Errorf("after SetIfUnchanged: %v %q %v", now, newTag, err)
		}
		changed, tag, err = ref.GetIfChanged(ctx, etag, &got)
		if err != nil || !changed || tag != newTag || got["v"] != 2 {
			t.Errorf("GetIfChanged after a change: %v %q %v %v", changed, tag, got, err)
		}

		// Create-if-absent through the null ETag.
		fresh := c.NewRef("sdk/fresh")
		var nothing any
		nullTag, err := fresh.GetWithETag(ctx, &nothing)
		if err != nil || nullTag != "null_etag" || nothing != nil {
			t.Errorf("GetWithETag on missing: %v %q %v", nothing, nullTag, err)
		}
		if ok, err := fresh.SetIfUnchanged(ctx, nullTag, "created"); err != nil || !ok {
			t.Errorf("SetIfUnchanged null_etag: %v %v", ok, err)
		}
		if ok, err := fresh.SetIfUnchanged(ctx, nullTag, "again"); err != nil || ok {
			t.Errorf("SetIfUnchanged null_etag on present: %v %v", ok, err)
		}
	})

	t.Run("Transaction", func(t *testing.T) {
		counter := c.NewRef("sdk/counter")
		if err := counter.Set(ctx, 0); err != nil {
			t.Fatalf("Set: %v", err)
		}
		const goroutines = 20
		var (
			wg        sync.WaitGroup
			mu        sync.Mutex
			successes int
			failures  []error
		)
		for range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := counter.Transaction(ctx, func(tn db.TransactionNode) (any, error) {
					var v int
					if err := tn.Unmarshal(&v); err != nil {
						return nil, err
					}
					return v + 1, nil
				})
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					successes++
				} else {
					failures = append(failures, err)
				}
			}()
		}
		wg.Wait()
		var final int
		if err := counter.Get(ctx, &final); err != nil {
			t.Fatalf("Get: %v", err)
		}
		if final != successes {
			t.Errorf("counter is %d, but %d transactions succeeded", final, successes)
		}
		for _, err := range failures {
			if !strings.Contains(err.Error(), "transaction aborted") {
				t.Errorf("a transaction failed other than by running out of retries: %v", err)
			}
		}
		if successes != goroutines {
			t.Errorf("%d of %d transactions succeeded (failures: %v)", successes, goroutines, failures)
		}
		t.Logf("%d transactions, %d succeeded, counter %d", goroutines, successes, final)
	})

	t.Run("Unauthenticated", func(t *testing.T) {
		anon := firebaseClient(t, n, "")
		var v any
		err := anon.NewRef("sdk/users").Get(ctx, &v)
		if err == nil || err.Error() != "http error status: 401; reason: Permission denied" {
			t.Errorf("Get without credentials: %v", err)
		}
		if err := anon.NewRef("sdk/users").Set(ctx, 1); err == nil || !strings.Contains(err.Error(), "Permission denied") {
			t.Errorf("Set without credentials: %v", err)
		}
		wrong := firebaseClient(t, n, "wrong")
		if err := wrong.NewRef("sdk/users").Get(ctx, &v); err == nil || !strings.Contains(err.Error(), "http error status: 401") {
			t.Errorf("Get with a wrong token: %v", err)
		}
	})
}
