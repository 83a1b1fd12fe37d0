package rules

import (
	"fmt"
	"testing"
)

// benchRules is a realistic rule set of about twenty rules: per-user data,
// posts with owners and validation, admin overrides and indexes.
const benchRules = `{
  "rules": {
    ".read": "auth != null && auth.token.admin === true",
    ".write": "auth != null && root.child('admins/' + auth.uid).val() === true",
    "admins": { ".read": false, ".write": false },
    "users": {
      "$uid": {
        ".read": "auth != null && auth.uid === $uid",
        ".write": "auth != null && auth.uid === $uid",
        ".validate": "newData.hasChildren(['name', 'email'])",
        "name": { ".validate": "newData.isString() && newData.val().length > 0 && newData.val().length <= 50" },
        "email": { ".validate": "newData.isString() && newData.val().matches(/^[^@ ]+@[^@ ]+[.][a-z]+$/i)" },
        "age": { ".validate": "newData.isNumber() && newData.val() >= 13 && newData.val() < 150" },
        "bio": { ".validate": "newData.isString() && newData.val().length < 1000" },
        "$other": { ".validate": false }
      }
    },
    "posts": {
      ".indexOn": ["owner", "created"],
      ".read": "auth != null && query.orderByChild == 'owner' && query.equalTo == auth.uid",
      "$post": {
        ".write": "auth != null && (!data.exists() || data.child('owner').val() === auth.uid) && (!newData.exists() || newData.child('owner').val() === auth.uid)",
        ".validate": "newData.hasChildren(['owner', 'title', 'created'])",
        "title": { ".validate": "newData.isString() && newData.val().length < 200" },
        "body": { ".validate": "newData.isString()" },
        "created": { ".validate": "newData.isNumber() && newData.val() <= now" },
        "owner": { ".validate": "newData.val() === auth.uid && root.child('users/' + auth.uid).exists()" },
        "tags": { "$tag": { ".validate": "newData.isBoolean() && $tag.matches(/^[a-z0-9-]{1,20}$/)" } }
      }
    }
  }
}`

func BenchmarkCanWrite(b *testing.B) {
	r := mustParse(b, benchRules)
	root := val0(map[string]any{
		"users": map[string]any{"u1": map[string]any{"name": "Ann", "email": "ann@example.com"}},
		"posts": map[string]any{},
	})
	post := map[string]any{
		"owner": "u1", "title": "Hello", "body": "First post", "created": 1700000000000.0,
		"tags": map[string]any{"intro": true, "go": true, "rules": true},
	}
	newRoot := set(root, "posts/p1", post)
	env := &Env{Auth: map[string]any{"uid": "u1", "token": map[string]any{}}, Now: 1700000000001, Root: root, NewRoot: newRoot}
	paths := [][]string{{"posts", "p1"}}
	if !r.CanWrite(paths, env) {
		b.Fatal("benchmark write denied")
	}
	b.Run("post", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.CanWrite(paths, env)
		}
	})
	profile := set(root, "users/u1", map[string]any{"name": "Ann B", "email": "ann@example.com", "age": 30.0, "bio": "hi"})
	penv := &Env{Auth: env.Auth, Now: env.Now, Root: root, NewRoot: profile}
	ppaths := [][]string{{"users", "u1"}}
	if !r.CanWrite(ppaths, penv) {
		b.Fatal("profile write denied")
	}
	b.Run("profile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.CanWrite(ppaths, penv)
		}
	})
	// A multi-path PATCH of 100 posts' titles.
	many := newRoot
	var mpaths [][]string
	for i := range 100 {
		id := fmt.Sprintf("p%03d", i)
		many = set(many, "posts/"+id, post)
		mpaths = append(mpaths, []string{"posts", id})
	}
	menv := &Env{Auth: env.Auth, Now: env.Now, Root: root, NewRoot: many}
	if !r.CanWrite(mpaths, menv) {
		b.Fatal("patch denied")
	}
	b.Run("patch100", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.CanWrite(mpaths, menv)
		}
	})
}

func BenchmarkCanRead(b *testing.B) {
	r := mustParse(b, benchRules)
	env := &Env{Auth: map[string]any{"uid": "u1", "token": map[string]any{}}, Root: val0(nil)}
	path := []string{"users", "u1", "name"}
	b.ReportAllocs()
	for b.Loop() {
		r.CanRead(path, env)
	}
}

func BenchmarkParse(b *testing.B) {
	src := []byte(benchRules)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(src); err != nil {
			b.Fatal(err)
		}
	}
}
