package fsm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// prepCase is a chunked command applied after setup, with writes
// applied between its chunks; prepared says whether the last chunk must
// use the prepared value (false: the one-step apply must take over).
type prepCase struct {
	name     string
	setup    []string // "PUT /path body" or "PATCH /path body"
	command  Command
	between  []string // applied between the chunks (halfway)
	prepared bool
	denied   bool // the write is refused by the rules (both ways)
	anyWay   bool // prepared or not: only the outcome is compared
}

// nullFields is n fields "d0000":null,… (no braces).
func nullFields(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"d%04d":null`, i)
	}
	return strings.Join(parts, ",")
}

// manyFields is a PATCH body of n one-key fields of assorted values.
func manyFields(n int, prefix string) string {
	var sb strings.Builder
	sb.WriteByte('{')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		switch i % 6 {
		case 0:
			fmt.Fprintf(&sb, `"%s%04d":%d`, prefix, i, i)
		case 1:
			fmt.Fprintf(&sb, `"%s%04d":"s%d"`, prefix, i, i)
		case 2:
			fmt.Fprintf(&sb, `"%s%04d":{"a":%d,"b":{"c":true},".priority":%d}`, prefix, i, i, i)
		case 3:
			fmt.Fprintf(&sb, `"%s%04d":%d.5`, prefix, i, i)
		case 4:
			fmt.Fprintf(&sb, `"%s%04d":{".value":"v","."+"priority":"p"}`, prefix, i)
		default:
			fmt.Fprintf(&sb, `"%s%04d":false`, prefix, i)
		}
	}
	sb.WriteByte('}')
	return strings.ReplaceAll(sb.String(), `"."+"priority"`, `".priority"`)
}

func parsedCmd(t *testing.T, kind CommandKind, path, body string) Command {
	t.Helper()
	c, ok := parsedTwin(cmd(t, kind, path, body))
	if !ok {
		t.Fatalf("parse %.200s", body)
	}
	return c
}

func withIfMatch(c Command, etag string) Command {
	c.HasIfMatch, c.IfMatch = true, etag
	return c
}

func withLimit(c Command, limit int64) Command {
	c.WriteLimit = limit
	return c
}

// TestChunkPrepMatchesOneStep: a chunked command prepared as its chunks
// come leaves exactly the tree, answer, events and error the whole entry
// applied in one step at its last chunk does — for every shape prepared
// and every shape left to the one-step apply, cut at any byte.
func TestChunkPrepMatchesOneStep(t *testing.T) {
	body := manyFields(300, "k")
	keys := `{"k0000":"old","k0007":{"x":1},"z":2,".priority":"p"}`
	etagOf := func(setup []string, path string) string {
		f := New()
		for i, s := range setup {
			applySetup(t, f, uint64(i+1), s)
		}
		return f.Root().Get(mustPath(t, path)).ETag()
	}
	setupObj := []string{"PUT /big " + keys, "PUT /other 1"}
	// A node with no priority: its size holds its children alone.
	setupPlain := []string{`PUT /big {"k0000":"old","k0007":{"x":1},"z":2}`, "PUT /other 1"}
	cases := []prepCase{
		{name: "patch into nothing", command: parsedCmd(t, CmdUpdate, "/big", body), prepared: true},
		{name: "patch out of key order", command: parsedCmd(t, CmdUpdate, "/big", `{"zz":1,"10":2,"9":3,`+body[1:]), prepared: true},
		{name: "patch leaving key order", command: parsedCmd(t, CmdUpdate, "/big", body[:len(body)-1]+`,"9":3,"a":{"b":1}}`), prepared: true},
		{name: "patch at the root", command: parsedCmd(t, CmdUpdate, "/", body), prepared: true},
		{name: "patch deep", setup: []string{"PUT /a/b/x 1"}, command: parsedCmd(t, CmdUpdate, "/a/b/c", body), prepared: true},
		{name: "patch into an object", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body), prepared: true},
		{name: "patch out of key order into an object", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body[:len(body)-1]+`,"10":2,"9":3,"a":4}`), prepared: true},
		{name: "patch into a leaf", setup: []string{`PUT /big {".value":"leaf",".priority":3}`}, command: parsedCmd(t, CmdUpdate, "/big", body), prepared: true},
		{name: "patch below a leaf", setup: []string{`PUT /a {".value":"leaf",".priority":3}`}, command: parsedCmd(t, CmdUpdate, "/a/big", body), prepared: true},
		{name: "patch an only child", setup: []string{`PUT /a {"big":{"k0001":1},".priority":4}`}, command: parsedCmd(t, CmdUpdate, "/a/big", body), prepared: true},
		{name: "writes elsewhere between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{"PUT /other 2", `PATCH / {"else/x":1}`, "PUT /big2 3"}, prepared: true},
		// Writes between the chunks to the node the PATCH writes: the
		// prepared value is rebased on them (chunkrebase.go) where it can.
		{name: "write to the node between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{"PUT /big/z 3", `PATCH /big {"new":1,"k0007/x":2}`}, prepared: true},
		{name: "a field's key written between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{`PUT /big/k0001 {"a":{"b":1}}`, "PUT /big/k0000 null"}, prepared: true},
		{name: "a field's key written large between", setup: setupObj, command: withLimit(parsedCmd(t, CmdUpdate, "/big", body), 300_000),
			between: []string{`PUT /big/k0001 "` + strings.Repeat("x", 300_000) + `"`}, prepared: true},
		{name: "a child deleted between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{"PUT /big/z null"}, prepared: true},
		{name: "the node's priority written between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{"PUT /big/.priority 5"}, prepared: true},
		{name: "the node's priority deleted between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{"PUT /big/.priority null", "PUT /big/z 3"}, prepared: true},
		{name: "the priority written between, a priority field", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{".priority":9,`+body[1:]),
			between: []string{"PUT /big/.priority 5"}},
		{name: "the priority written between, nulls of an only child", setup: []string{`PUT /a {"big":{"x":1,"y":2},".priority":4}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,"y":null,`+body[1:]), between: []string{"PUT /a/big/.priority 5"}},
		{name: "the priority written between, nulls", setup: []string{`PUT /a {"big":{"x":1,"y":2},"s":1}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,`+body[1:]), between: []string{"PUT /a/big/.priority 5"}, prepared: true},
		{name: "deep fields, node replaced between", setup: setupPlain,
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0007/x":5,"q/r":1,`+regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body[1:], `"$1/v/w":`)),
			between: []string{`PUT /big {"k0001":{"v":{"x":1}},"k0007":"leaf","q":1,"s":{"t":2},".priority":7}`}, prepared: true},
		{name: "deep fields, node deleted between", setup: setupPlain,
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0007/x":5,`+regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body[1:], `"$1/v/w":`)),
			between: []string{"PUT /big null"}, prepared: true},
		{name: "deep fields into nothing, node made between",
			command: parsedCmd(t, CmdUpdate, "/big", regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"$1/v/w":`)),
			between: []string{`PUT /big/k0001 {"v":{"x":1}}`, "PUT /big/q 1", "PUT /big/.priority 3"}, prepared: true},
		{name: "deep fields, node replaced by a leaf between", setup: setupPlain,
			command: parsedCmd(t, CmdUpdate, "/big", regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"$1/v/w":`)),
			between: []string{`PUT /big "leaf"`}, prepared: true},
		{name: "deep fields into a leaf, node made another leaf between", setup: []string{"PUT /big 4"},
			command: parsedCmd(t, CmdUpdate, "/big", regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"$1/v/w":`)),
			between: []string{`PUT /big 5`}, prepared: true},
		{name: "deep fields into a leaf with a priority, node made another leaf between", setup: []string{`PUT /big {".value":4,".priority":1}`},
			command: parsedCmd(t, CmdUpdate, "/big", regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"$1/v/w":`)),
			between: []string{`PUT /big 5`}},
		{name: "one-key fields into a leaf, node made an object between", setup: []string{"PUT /big 4"},
			command: parsedCmd(t, CmdUpdate, "/big", `{"q":null,`+body[1:]), between: []string{`PUT /big {"q":1,"k0001":2}`}, prepared: true},
		{name: "deep fields into nothing, node made a leaf between",
			command: parsedCmd(t, CmdUpdate, "/big", regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"$1/v/w":`)),
			between: []string{`PUT /big 5`}, prepared: true},
		{name: "nulls only, node made a leaf between", setup: setupPlain,
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0000":null,"z/y":null,`+nullFields(300)+`}`),
			between: []string{`PUT /big 5`}, prepared: true},
		{name: "deep fields, node replaced by a leaf with a priority between", setup: setupPlain,
			command: parsedCmd(t, CmdUpdate, "/big", regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"$1/v/w":`)),
			between: []string{`PUT /big {".value":"leaf",".priority":1}`}},
		{name: "increments, node replaced between", setup: []string{`PUT /big {"k0001":5}`},
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0001":{".sv":{"increment":2}},"kz":{".sv":{"increment":1}},`+body[len(`{"k0000":0,"k0001":"s1","k0002":{"a":2,"b":{"c":true},".priority":2},`):]),
			between: []string{`PUT /big {"k0001":10,"kz":0.5,"q":1}`}, prepared: true},
		{name: "nulls, node deleted between", setup: setupPlain, command: parsedCmd(t, CmdUpdate, "/big", `{"z":null,`+body[1:]),
			between: []string{"PUT /big null"}, prepared: true},
		{name: "deep fields, a node with a priority replaced between", setup: setupObj,
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0007/x":5,`+regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body[1:], `"$1/v/w":`)),
			between: []string{`PUT /big {"k0001":{"v":{"x":1}},"q":1}`}, prepared: true},
		{name: "deep fields, replaced between by a node whose priority was deleted", setup: setupPlain,
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0007/x":5,`+regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body[1:], `"$1/v/w":`)),
			between: []string{`PUT /big {"k0001":{"v":{"x":1}},"q":1,".priority":2}`, "PUT /big/.priority null"}, prepared: true},
		{name: "one-key fields, replaced between by a node whose priority was deleted", setup: setupPlain, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{`PUT /big {"k0001":{"v":{"x":1}},"q":1,".priority":2}`, "PUT /big/.priority null"}, prepared: true},
		{name: "a node that died and came back between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{`PATCH /big {"k0000":null,"k0007":null,"z":null,"q":1}`}},
		{name: "a node whose priority was deleted, that died and came back between",
			setup: []string{`PUT /big {"k0000":"old","z":2,".priority":"p"}`, "PUT /big/.priority null"}, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{`PATCH /big {"k0000":null,"z":null,"q":1}`}},
		{name: "a node given a priority, that died and came back between",
			setup: []string{`PUT /big {"k0000":"old","z":2}`, "PUT /big/.priority 5"}, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{`PATCH /big {"k0000":null,"z":null,"q":1}`}},
		{name: "a node without a priority that died and came back between", setup: setupPlain, command: parsedCmd(t, CmdUpdate, "/big", `{"z/x":null,`+body[1:]),
			between: []string{`PATCH /big {"k0000":null,"k0007":null,"z":null,"q":1}`}, prepared: true},
		{name: "nulls of every child of the replacement, an only child", setup: []string{`PUT /a {"big":{"q":1},".priority":4}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,"y":null,`+body[1:]), between: []string{`PUT /a/big {"x":1,"y":2}`}},
		{name: "nulls of every child of the replacement, beside a sibling", setup: []string{`PUT /a {"big":{"q":1},"s":1,".priority":4}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,"y":null,`+body[1:]), between: []string{`PUT /a/big {"x":1,"y":2}`}, prepared: true},
		{name: "priority field, node deleted between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{".priority":9,"q/x":1,`+body[1:]),
			between: []string{"PUT /big null"}},
		{name: "node replaced between", command: parsedCmd(t, CmdUpdate, "/big", body), between: []string{"PUT /big 5"}, prepared: true},
		{name: "node replaced by an object between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{`PUT /big {"q":1,"k0001":{"z":2}}`}, prepared: true},
		{name: "node deleted between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{"PUT /big null"}, prepared: true},
		{name: "node made between", command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{"PUT /big/q 1", "PUT /big/k0002 1"}, prepared: true},
		{name: "ancestor replaced between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body), between: []string{"PUT / 1"}, prepared: true},
		{name: "deep fields and a write between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{"a/b":1,`+body[1:]),
			between: []string{"PUT /big/z 3"}, prepared: true},
		{name: "deep fields and their keys written between", setup: setupObj,
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0001/.priority":5,"k0007/x":{"y":1},`+regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body[1:], `"$1/v/w":`)),
			between: []string{`PUT /big/k0001 {"q":1}`, `PUT /big/k0007 "leaf"`, "PUT /big/k0009 null", "PUT /big/z null"}, prepared: true},
		{name: "a deep field's path written large between", setup: setupObj,
			command: withLimit(parsedCmd(t, CmdUpdate, "/big", regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"$1/v/w":`)), 300_000),
			between: []string{`PUT /big/k0001/v/w "` + strings.Repeat("x", 300_000) + `"`}, prepared: true},
		{name: "a deep field's large path shrunk between", setup: []string{`PUT /big/k0001/v/w "` + strings.Repeat("x", 300_000) + `"`},
			command: withLimit(parsedCmd(t, CmdUpdate, "/big", regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"$1/v/w":`)), 300_000),
			between: []string{`PUT /big/k0001/v/w "small"`}, prepared: true},
		{name: "increments and a write between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{"z":{".sv":{"increment":1}},`+body[1:]),
			between: []string{"PUT /big/z 3"}, prepared: true},
		{name: "increments and their keys written between", setup: []string{`PUT /big {"k0001":5,"q":{"n":1}}`},
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0001":{".sv":{"increment":2}},"q/n":{".sv":{"increment":1.5}},"q/m":{".value":{".sv":{"increment":1}},".priority":2},`+body[len(`{"k0000":0,"k0001":"s1","k0002":{"a":2,"b":{"c":true},".priority":2},`):]),
			between: []string{"PUT /big/k0001 10", `PUT /big/q {"n":"s","m":7}`}, prepared: true},
		{name: "an increment overflowing after a write between", setup: []string{`PUT /big {"k0001":5}`},
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0001":{".sv":{"increment":1.7e308}},`+body[len(`{"k0000":0,"k0001":"s1","k0002":{"a":2,"b":{"c":true},".priority":2},`):]),
			between: []string{"PUT /big/k0001 1.7e308"}},
		{name: "if-match", setup: setupObj, command: withIfMatch(parsedCmd(t, CmdUpdate, "/big", body), etagOf(setupObj, "/big")), prepared: true},
		{name: "if-match fails", setup: setupObj, command: withIfMatch(parsedCmd(t, CmdUpdate, "/big", body), "nope"), prepared: true},
		{name: "within the limit", setup: setupObj, command: withLimit(parsedCmd(t, CmdUpdate, "/big", body), 1<<20), prepared: true},
		{name: "over the limit", setup: setupObj, command: withLimit(parsedCmd(t, CmdUpdate, "/big", body), 500), prepared: true},
		{name: "patch nested values", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/", `{"big":`+body+`,"other":{"x":`+body+`}}`), prepared: true},
		{name: "nulls", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{"z":null,"gone":null,`+body[1:]), prepared: true},
		// A node whose children are all deleted dies; its parent, when it
		// is the only child, dies too and comes back without its priority.
		{name: "dies and comes back under a priority", setup: []string{`PUT /a {"big":{"x":1,"y":2},".priority":4}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,"y":null,`+body[1:]), prepared: true},
		{name: "dies and comes back beside a sibling", setup: []string{`PUT /a {"big":{"x":1,"y":2},"s":1,".priority":4}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,"y":null,`+body[1:]), prepared: true},
		{name: "dies and comes back under no priority", setup: []string{`PUT /a/b {"big":{"x":1,"y":2}}`, `PUT /a/c 1`},
			command: parsedCmd(t, CmdUpdate, "/a/b/big", `{"x":null,"y":null,`+body[1:]), prepared: true},
		{name: "dies", setup: []string{`PUT /a {"big":{"x":1,"y":2},"s":1,".priority":4}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,"y":null,`+nullFields(300)+`}`), prepared: true},
		{name: "dies, the only child", setup: []string{`PUT /a {"big":{"x":1,"y":2},".priority":4}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,"y":null,"z":null,"w":null}`), prepared: true},
		{name: "dies and comes back, three only children deep", setup: []string{`PUT /a {"b":{"c":{"big":{"x":1},".priority":2}},".priority":1}`, `PUT /s 1`},
			command: parsedCmd(t, CmdUpdate, "/a/b/c/big", `{"x":null,`+body[1:]), prepared: true},
		{name: "dies and comes back, the root's only child", setup: []string{`PUT / {"big":{"x":1},".priority":1}`},
			command: parsedCmd(t, CmdUpdate, "/big", `{"x":null,`+body[1:]), prepared: true},
		{name: "the root dies and comes back", setup: []string{`PUT / {"x":1,".priority":1}`},
			command: parsedCmd(t, CmdUpdate, "/", `{"x":null,`+body[1:]), prepared: true},
		{name: "made, deleted and made again below a leaf", setup: []string{`PUT /a {".value":"leaf",".priority":3}`},
			command: func() Command {
				c := parsedCmd(t, CmdUpdate, "/a/big", body)
				c.Fields = append(append(append([]tree.Field{}, c.Fields[:1]...), tree.Field{Path: tree.Path{"k0000"}, Value: nil}), c.Fields[1:]...)
				c.Fields[0], c.Fields[1] = c.Fields[1], c.Fields[0]
				c.Fields = append([]tree.Field{{Path: tree.Path{"k0000"}, Value: tree.Int(1)}}, c.Fields...)
				return c
			}(), prepared: true},
		// Nulls, and writes to the node between the chunks.
		{name: "nulls and a write between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{"z":null,"gone":null,`+body[1:]),
			between: []string{"PUT /big/q 3", "PUT /big/k0007 null"}, prepared: true},
		{name: "nulls and their keys written between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{"gone":null,"z":null,`+body[1:len(body)-1]+`,"zz":null}`),
			between: []string{"PUT /big/z 3", "PUT /big/gone 4", `PUT /big/k0001 {"a":1}`, "PUT /big/zz 5"}, prepared: true},
		{name: "nulls, and between a child no field touches", setup: []string{`PUT /a {"big":{"x":1,"y":2},".priority":4}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,"y":null,`+body[1:]), between: []string{"PUT /a/big/q 1"}, prepared: true},
		{name: "nulls, and between a child no field touches, under a priority", setup: []string{`PUT /big {"x":1,"y":2,".priority":3}`},
			command: parsedCmd(t, CmdUpdate, "/big", `{"x":null,"y":null,`+body[1:]), between: []string{"PUT /big/q 1"}, prepared: true},
		{name: "nulls of every child, written between, an only child", setup: []string{`PUT /a {"big":{"x":1,"y":2},".priority":4}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,"y":null,`+body[1:]), between: []string{"PUT /a/big/x 5"}},
		{name: "nulls of every child, written between, beside a sibling", setup: []string{`PUT /a {"big":{"x":1,"y":2},"s":1,".priority":4}`},
			command: parsedCmd(t, CmdUpdate, "/a/big", `{"x":null,"y":null,`+body[1:]), between: []string{"PUT /a/big/x 5", "PUT /a/big/w 6", "PUT /a/big/w null"}, prepared: true},
		{name: "nulls, and between the last child left deleted, another made", setup: []string{`PUT /big {"x":1,"y":2,".priority":3}`},
			command: parsedCmd(t, CmdUpdate, "/big", `{"x":null,`+nullFields(300)+`}`), between: []string{"PUT /big/y null", "PUT /big/z 1"}, prepared: true},
		{name: "nulls and a priority field, written between", setup: setupObj,
			command: parsedCmd(t, CmdUpdate, "/big", `{".priority":9,"z":null,`+body[1:]), between: []string{"PUT /big/z 3", "PUT /big/k0000 null"}, prepared: true},
		{name: "deep nulls and their keys written between", setup: setupObj,
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0001/u":null,"k0007/x":null,"z/q":null,`+regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body[1:], `"$1/v/w":`)),
			between: []string{`PUT /big/k0001 {"v":1,"u":2}`, `PUT /big/k0007/y 2`, "PUT /big/k0009 null", `PUT /big/z {"q":1}`}, prepared: true},
		{name: "deep nulls taking a child written between", setup: setupObj,
			command: parsedCmd(t, CmdUpdate, "/big", `{"z/x":null,"q/r":null,`+body[1:]),
			between: []string{`PUT /big/q {"r":1}`}, prepared: true},
		{name: "increments and nulls, written between", setup: []string{`PUT /big {"k0001":5,"q":1,"s":2}`},
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0001":{".sv":{"increment":2}},"q":null,`+body[len(`{"k0000":0,"k0001":"s1","k0002":{"a":2,"b":{"c":true},".priority":2},`):]),
			between: []string{"PUT /big/k0001 10", "PUT /big/q 3"}, prepared: true},
		{name: "nulls, node replaced between", setup: setupPlain, command: parsedCmd(t, CmdUpdate, "/big", `{"z":null,`+body[1:]),
			between: []string{`PUT /big {"z":1}`}, prepared: true},
		{name: "nulls into nothing", command: parsedCmd(t, CmdUpdate, "/big", `{"x":null,`+body[1:]), prepared: true},
		{name: "server values", command: parsedCmd(t, CmdUpdate, "/big", `{"t":{".sv":"timestamp"},`+body[1:])},
		{name: "increments", setup: []string{`PUT /big {"k0001":5,"k0002":1.5,"q":"s"}`},
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0001":{".sv":{"increment":2}},"k0002":{".sv":{"increment":1}},"q":{".sv":{"increment":1}},"z":{".sv":{"increment":3}},`+body[len(`{"k0000":0,"k0001":"s1","k0002":{"a":2,"b":{"c":true},".priority":2},`):]), prepared: true},
		{name: "increments into nothing", command: parsedCmd(t, CmdUpdate, "/big", body[:len(body)-1]+`,"zz":{".sv":{"increment":3}},"zzz":4}`), prepared: true},
		{name: "increment overflows", setup: []string{`PUT /big {"k0001":1.7e308}`},
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0001":{".sv":{"increment":1.7e308}},"k0002":1,`+body[len(`{"k0000":0,"k0001":"s1","k0002":{"a":2,"b":{"c":true},".priority":2},`):]), prepared: true},
		{name: "deep fields", command: parsedCmd(t, CmdUpdate, "/big", `{"a/b":1,`+body[1:]), prepared: true},
		{name: "deep fields in order", command: parsedCmd(t, CmdUpdate, "/big", regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"$1/v/w":`)), prepared: true},
		{name: "one-key then deep fields", command: parsedCmd(t, CmdUpdate, "/big", body[:len(body)-1]+`,"x/y":1,"x/z/q":{"r":2},"y":3}`), prepared: true},
		{name: "deep fields out of order", command: parsedCmd(t, CmdUpdate, "/big", body[:len(body)-1]+`,"a/b":1}`), prepared: true},
		{name: "joined names out of order", command: parsedCmd(t, CmdUpdate, "/big", body[:len(body)-1]+`,"x/b":1,"x-/c":2}`), prepared: true},
		{name: "priorities and deletes deep into an object", setup: []string{`PUT /big {"a":{"b":1,"c":{"d":2}},"e":3,".priority":1}`},
			command: parsedCmd(t, CmdUpdate, "/big", `{"a/.priority":5,"a/c/d":null,"e/f":{"g":1},"a/b":null,"q/r/.priority":2,`+body[1:]), prepared: true},
		{name: "deep fields into an object", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{"a/b":1,`+body[1:]), prepared: true},
		{name: "priority field into nothing", command: parsedCmd(t, CmdUpdate, "/big", `{".priority":9,`+body[1:]), prepared: true},
		{name: "priority member out of order", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", body[:len(body)-1]+`,".priority":3,"10":1}`), prepared: true},
		{name: "priority member out of order, written between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{"zz":1,".priority":3,`+body[1:]),
			between: []string{"PUT /big/zz 2", "PUT /big/k0001 3"}, prepared: true},
		{name: "priority member, a deep field, written between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{"zz":1,".priority":3,"q/r":2,`+body[1:]),
			between: []string{"PUT /big/zz 2", "PUT /big/q 3"}, prepared: true},
		{name: "priority field", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{".priority":9,`+body[1:]), prepared: true},
		{name: "put an object", setup: setupObj, command: parsedCmd(t, CmdSet, "/big", body), prepared: true},
		{name: "put at the root", setup: setupObj, command: parsedCmd(t, CmdSet, "/", body), prepared: true},
		{name: "put with a priority", command: parsedCmd(t, CmdSet, "/big", `{".priority":7,`+body[1:]), prepared: true},
		{name: "put with a value priority", command: parsedCmd(t, CmdSet, "/big", `{".priority":"p",".value":`+body+`}`), prepared: true},
		{name: "put if-match fails", setup: setupObj, command: withIfMatch(parsedCmd(t, CmdSet, "/big", body), "nope"), prepared: true},
		{name: "put over the limit", setup: setupObj, command: withLimit(parsedCmd(t, CmdSet, "/big", body), 500), prepared: true},
		{name: "put a string", command: parsedCmd(t, CmdSet, "/big", `"`+strings.Repeat("s", 9000)+`"`)},
		// A PUT's value is decoded as it is, placeholders and all, and
		// resolved when applied: server values do not matter.
		{name: "put with server values", setup: []string{"PUT /big/c/n 5"}, command: parsedCmd(t, CmdSet, "/big",
			`{"t":{".sv":"timestamp"},"c":{"n":{".sv":{"increment":2}}},`+body[1:]), prepared: true},
		{name: "put nested", setup: setupObj, command: parsedCmd(t, CmdSet, "/", `{"a":{"b":`+body+`,".priority":1},"c":{".value":`+body+`,".priority":"x"},"d":5}`), prepared: true},
		{name: "put with nulls", command: parsedCmd(t, CmdSet, "/big", `{"a":null,"b":{"c":null,"d":1},`+body[1:]), prepared: true},
		{name: "put a priority", setup: setupObj, command: parsedCmd(t, CmdSet, "/big/.priority", `"`+strings.Repeat("s", 900)+`"`)},
		{name: "patch of one field holding a large object", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/", `{"big/x":`+body+`}`), prepared: true},
		{name: "patch of one field, written between", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{"x":`+body+`}`),
			between: []string{"PUT /big/x/k0001 1", "PUT /big/y 2"}, prepared: true},
		{name: "patch of one null field", setup: setupObj, command: parsedCmd(t, CmdUpdate, "/big", `{"k0000":null}`), prepared: true},
		{name: "post an object", setup: setupObj, command: parsedCmd(t, CmdPush, "/big", body), prepared: true},
		{name: "post with server values and a priority", command: parsedCmd(t, CmdPush, "/list", `{"t":{".sv":"timestamp"},".priority":2,`+body[1:]), prepared: true},
		{name: "post, written between", setup: setupObj, command: parsedCmd(t, CmdPush, "/big", body), between: []string{"PUT /big 5", "PUT /big/q 1"}, prepared: true},
		{name: "post over the limit", setup: setupObj, command: withLimit(parsedCmd(t, CmdPush, "/big", body), 500), prepared: true},
		{name: "post a string", command: parsedCmd(t, CmdPush, "/big", `"`+strings.Repeat("s", 9000)+`"`)},
	}
	// Fields the parser never makes: the same key twice (the last wins).
	dup := parsedCmd(t, CmdUpdate, "/big", body)
	dup.Fields = append(dup.Fields, tree.Field{Path: tree.Path{"k0001"}, Value: tree.String("again")})
	cases = append(cases, prepCase{name: "a key twice", setup: setupObj, command: dup, prepared: true})
	// Writes judged when applied: their paths are gathered as the chunks
	// come, and judged at the last one.
	ownRules := `RULES {"rules": {"users": {"$uid": {".read": "auth.uid == $uid", ".write": "auth.uid == $uid",
		"k0006": {".validate": "newData.isNumber() && newData.val() < 100"}, "$other": {".validate": "!newData.isString() || newData.val() != 'no'"}}}}}`
	judged := func(kind CommandKind, path, body, uid string) Command {
		c := parsedCmd(t, kind, path, body)
		c.As = &Access{Auth: map[string]any{"uid": uid}}
		return c
	}
	usersSetup := []string{ownRules, `PUT /users/u1 {"k0001":"old","x":{"y":1}}`}
	cases = append(cases,
		prepCase{name: "judged, open by default", command: func() Command {
			c := parsedCmd(t, CmdUpdate, "/big", body)
			c.As = &Access{Auth: map[string]any{"uid": "u"}, OpenIfUnset: true}
			return c
		}(), prepared: true},
		prepCase{name: "judged, allowed", setup: usersSetup, command: judged(CmdUpdate, "/users/u1", body, "u1"), prepared: true},
		prepCase{name: "judged, into nothing", setup: []string{ownRules}, command: judged(CmdUpdate, "/users/u2", body, "u2"), prepared: true},
		prepCase{name: "judged, another's", setup: usersSetup, command: judged(CmdUpdate, "/users/u1", body, "u2"), prepared: true, denied: true},
		prepCase{name: "judged, invalid", setup: usersSetup, command: judged(CmdUpdate, "/users/u1", body[:len(body)-1]+`,"zz":"no"}`, "u1"), prepared: true, denied: true},
		prepCase{name: "judged, deep", setup: usersSetup, command: judged(CmdUpdate, "/users", regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"u1/$1":`), "u1"), prepared: true},
		prepCase{name: "judged, if-match fails", setup: usersSetup, command: withIfMatch(judged(CmdUpdate, "/users/u1", body, "u1"), "nope"), prepared: true},
		prepCase{name: "judged PUT", setup: usersSetup, command: judged(CmdSet, "/users/u1", body, "u1"), prepared: true},
		prepCase{name: "judged PUT, another's", setup: usersSetup, command: judged(CmdSet, "/users/u1", body, "u2"), prepared: true, denied: true},
		prepCase{name: "judged POST", setup: usersSetup, command: judged(CmdPush, "/users/u1", body, "u1"), prepared: true},
		prepCase{name: "judged POST, another's", setup: usersSetup, command: judged(CmdPush, "/users/u1", body, "u2"), prepared: true, denied: true},
	)

	// A PUT judged ahead is prepared; its rules must still be in force.
	for _, rulesIndex := range []uint64{0, 5} {
		pj := parsedCmd(t, CmdSet, "/big", body)
		pj.As = &Access{OpenIfUnset: true}
		pj.Prejudged, pj.PrejudgedRules = true, rulesIndex
		cases = append(cases, prepCase{name: fmt.Sprintf("prejudged by rules %d", rulesIndex), setup: setupObj, command: pj, prepared: true})
	}
	var edges []prepCase
	for _, tc := range cases {
		// Not for a path written twice (crafted: the parser refuses it),
		// which counts what the first write left in its batch and what
		// the node had in one step (chunkprep.go).
		if tc.command.Kind == CmdUpdate && tc.command.As == nil && tc.name != "made, deleted and made again below a leaf" {
			edges = append(edges, tc)
		}
	}
	cases = append(cases, atTheLimit(t, edges)...)
	runPrepCases(t, cases)
	// Again with the rebase's bounds tiny: every node counts as large,
	// every scan as cut short; whichever way is taken, the outcome is the
	// one-step apply's.
	t.Run("tiny bounds", func(t *testing.T) {
		defer tinyRebaseBounds()()
		for i := range cases {
			cases[i].anyWay = true
		}
		runPrepCases(t, cases)
	})
}

// TestChunkRebaseOnALargeNodeReplaced: a PATCH into a node of many
// children (here: over two) that another write replaces between the
// chunks keeps what its fields made, takes the node's untouched children
// out in one pass, and applies the fields under the others again.
func TestChunkRebaseOnALargeNodeReplaced(t *testing.T) {
	was := rebaseCurMax
	rebaseCurMax = 2
	defer func() { rebaseCurMax = was }()
	body := manyFields(300, "k")
	deep := regexp.MustCompile(`"(k\d+)":`).ReplaceAllString(body, `"$1/v/w":`)
	many := []string{`PUT /big {"k0000":"old","k0007":{"x":1},"z":2,"y":{"q":1}}`, "PUT /other 1"}
	withPrio := []string{`PUT /big {"k0000":"old","k0007":{"x":1},"z":2,"y":{"q":1},".priority":1}`}
	incs := `{"z":{".sv":{"increment":2}},"y/n":{".sv":{"increment":1}},` + deep[1:]
	cases := []prepCase{
		{name: "deep fields, replaced by a leaf", setup: many, command: parsedCmd(t, CmdUpdate, "/big", deep),
			between: []string{"PUT /big 5"}, prepared: true},
		{name: "deep fields, replaced by an object", setup: withPrio, command: parsedCmd(t, CmdUpdate, "/big", `{"z/x":null,`+deep[1:]),
			between: []string{`PUT /big {"k0001":{"v":{"x":1}},"z":{"x":1,"y":2},".priority":3}`}, prepared: true},
		{name: "deep fields, deleted", setup: many, command: parsedCmd(t, CmdUpdate, "/big", deep),
			between: []string{"PUT /big null"}, prepared: true},
		{name: "deep fields and nulls under its children, replaced", setup: many,
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0007/x":null,"y/q":null,"z":null,`+deep[1:]),
			between: []string{`PUT /big {"k0007":{"x":1,"w":2},"y":{"q":1}}`}, prepared: true},
		{name: "increments under its children, replaced", setup: many, command: parsedCmd(t, CmdUpdate, "/big", incs),
			between: []string{`PUT /big {"z":5,"y":{"n":1.5}}`}, prepared: true},
		{name: "increments under its children, deleted", setup: many, command: parsedCmd(t, CmdUpdate, "/big", incs),
			between: []string{"PUT /big null"}, prepared: true},
		{name: "deep fields, replaced by an object of many children", setup: many, command: parsedCmd(t, CmdUpdate, "/big", deep),
			between: []string{`PUT /big {"k0001":1,"q":2,"r":3}`}},
		{name: "nulls of every child, replaced by a leaf", setup: many,
			command: parsedCmd(t, CmdUpdate, "/big", `{"k0000":null,"k0007":null,"z":null,"y":null,`+nullFields(300)+`}`),
			between: []string{"PUT /big 5"}, prepared: true},
		{name: "one-key fields, replaced", setup: many, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{`PUT /big {"k0001":1,"q":2}`}, prepared: true},
		{name: "one-key fields, deleted", setup: many, command: parsedCmd(t, CmdUpdate, "/big", body),
			between: []string{"PUT /big null"}, prepared: true},
		{name: "deep fields, written below, not replaced", setup: many, command: parsedCmd(t, CmdUpdate, "/big", deep),
			between: []string{"PUT /big/k0001/v/x 1", "PUT /big/z null"}, prepared: true},
	}
	runPrepCases(t, append(cases, atTheLimit(t, cases)...))
}

// atTheLimit is each case with the write limit at exactly what the
// one-step apply counts (allowed) and one byte under it (refused): the
// sizes a rebase counts must be the same.
func atTheLimit(t *testing.T, cases []prepCase) []prepCase {
	var out []prepCase
	for _, tc := range cases {
		ref := New()
		for i, s := range append(append([]string{}, tc.setup...), tc.between...) {
			applySetup(t, ref, uint64(i+1), s)
		}
		c := tc.command
		u, err := tree.UpdateCounted(ref.Root(), tree.Write{Path: c.Path, CheckIncrements: true}, c.Fields)
		if err != nil {
			continue // refused whatever the limit
		}
		for _, limit := range []int64{u.Written + u.Removed, u.Written + u.Removed - 1} {
			tl := tc
			tl.name = fmt.Sprintf("%s, limit %d", tc.name, limit)
			tl.command = withLimit(c, limit)
			out = append(out, tl)
		}
	}
	return out
}

// tinyRebaseBounds sets the rebase's bounds to tiny values until the
// function it returns is called.
func tinyRebaseBounds() (restore func()) {
	dirty, cur, scan, nulls := rebaseDirtyMax, rebaseCurMax, rebaseScan, nullKeysMax
	rebaseDirtyMax, rebaseCurMax, rebaseScan, nullKeysMax = 3, 1, 1, 2
	return func() { rebaseDirtyMax, rebaseCurMax, rebaseScan, nullKeysMax = dirty, cur, scan, nulls }
}

func runPrepCases(t *testing.T, cases []prepCase) {
	rng := rand.New(rand.NewPCG(19, 5))
	for _, tc := range cases {
		entry := tc.command.EncodeParsed()
		for _, size := range []int{7, 61, 997, len(entry)/2 + 1, 1 + rng.IntN(len(entry)/3)} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, size), func(t *testing.T) {
				checkPrepMatches(t, tc, entry, size)
			})
		}
	}
}

// applySetup applies "PUT /p body" or "PATCH /p body" at index.
func applySetup(t *testing.T, f *FSM, index uint64, s string) *ApplyResponse {
	t.Helper()
	method, rest, _ := strings.Cut(s, " ")
	if method == "RULES" {
		r := f.Apply(Entry{Index: index, Term: 1, Command: true, Data: (&Command{Kind: CmdSetRules, Body: []byte(rest)}).Encode()})
		if r.Err != nil {
			t.Fatalf("%s: %v", s, r.Err)
		}
		return r
	}
	path, body, _ := strings.Cut(rest, " ")
	kind := CmdSet
	if method == "PATCH" {
		kind = CmdUpdate
	}
	c := parsedCmd(t, kind, path, body)
	r := f.Apply(Entry{Index: index, Term: 1, Command: true, Data: c.EncodeParsed()})
	if r.Err != nil {
		t.Fatalf("%s: %v", s, r.Err)
	}
	return r
}

func checkPrepMatches(t *testing.T, tc prepCase, entry []byte, size int) {
	// One step: the writes between, then the whole entry.
	ref := New()
	index := uint64(0)
	for _, s := range tc.setup {
		index++
		applySetup(t, ref, index, s)
	}
	for _, s := range tc.between {
		index++
		applySetup(t, ref, index, s)
	}
	index++
	var refEvents []Event
	ref.SetEventSink(func(ev []Event) { refEvents = append(refEvents, ev...) })
	want := ref.Apply(Entry{Index: index, Term: 1, Command: true, Data: entry})

	// Chunked, the writes after the first chunk.
	f := New()
	index = 0
	for _, s := range tc.setup {
		index++
		applySetup(t, f, index, s)
	}
	logs := chunkLogs(ChunkID{7}, entry, size, index+1, 1)
	if len(logs) < 2 {
		t.Skipf("one chunk of %d bytes", size) // not chunked: nothing to prepare
	}
	var events []Event
	before := preparedApplies.Load()
	var got *ApplyResponse
	for i, l := range logs {
		if i == len(logs)/2 {
			for _, s := range tc.between {
				index++
				applySetup(t, f, index, s)
			}
			f.SetEventSink(func(ev []Event) { events = append(events, ev...) })
		}
		index++
		l.Index = index
		got = f.Apply(l)
	}
	if used := preparedApplies.Load() > before; used != tc.prepared && !tc.anyWay {
		t.Errorf("prepared value used: %v, want %v", used, tc.prepared)
	}
	if a, b := renderExport(f.Root()), renderExport(ref.Root()); a != b || f.Root().ETag() != ref.Root().ETag() || f.Root().Size() != ref.Root().Size() {
		at := 0
		for at < min(len(a), len(b)) && a[at] == b[at] {
			at++
		}
		from := max(0, at-150)
		t.Fatalf("tree (size %d vs %d), from byte %d:\n chunked  %.400s\n one step %.400s", f.Root().Size(), ref.Root().Size(), from, a[from:], b[from:])
	}
	if denied := errors.Is(want.Err, ErrDenied); denied != tc.denied {
		t.Errorf("denied %v (%v), want %v", denied, want.Err, tc.denied)
	}
	if fmt.Sprint(got.Err) != fmt.Sprint(want.Err) || Code(got.Err) != Code(want.Err) {
		t.Fatalf("error: chunked %v, one step %v", got.Err, want.Err)
	}
	gr, wr := got.Result, want.Result
	gr.Index, wr.Index = 0, 0
	if resultString(gr) != resultString(wr) {
		t.Fatalf("result:\n chunked  %.400s\n one step %.400s", resultString(gr), resultString(wr))
	}
	if eventsString(events) != eventsString(refEvents) {
		t.Fatalf("events:\n chunked  %.400s\n one step %.400s", eventsString(events), eventsString(refEvents))
	}
}

func resultString(r Result) string {
	s := fmt.Sprintf("value %s etag %s size %d name %q fields", renderExport(r.Value), r.ETag, r.Value.Size(), r.Name)
	if r.Fields == nil {
		return s + " nil"
	}
	return s + " " + string(tree.AppendFields(nil, r.Fields, tree.RenderOptions{Export: true}))
}

func eventsString(evs []Event) string {
	var sb strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&sb, "%d %s %s ", e.Kind, e.Path, renderExport(e.Value))
		if e.Fields != nil {
			sb.Write(tree.AppendFields(nil, e.Fields, tree.RenderOptions{Export: true}))
		}
		sb.WriteByte('|')
	}
	return sb.String()
}

// TestChunkPrepContainsPanics: a panic while preparing leaves the
// command to the one-step apply instead of stopping the node.
func TestChunkPrepContainsPanics(t *testing.T) {
	c := parsedCmd(t, CmdUpdate, "/big", manyFields(50, "k"))
	entry := c.EncodeParsed()
	pr := &chunkPrep{}
	pr.take(nil, entry[:len(entry)/2], 2)
	pr.trie = &pathTrie{} // broken: adding to it panics
	pr.take(nil, entry[len(entry)/2:], 2)
	if !pr.off {
		t.Fatal("a panic while preparing did not turn the preparation off")
	}
	if _, _, _, _, ok := pr.apply(&state{}); ok {
		t.Fatal("a preparation turned off was applied")
	}
	pr = &chunkPrep{head: true, kind: CmdSetParsed, stream: wireStream{done: true}}
	pr.tail = nil // the trailer missing: decoded as nothing, refused
	if _, _, _, _, ok := pr.apply(nil); ok {
		t.Fatal("applied without a trailer")
	}
}

// FuzzChunkPrep applies arbitrary entries cut into chunks of arbitrary
// size, between writes, and in one step: the tree, answer and error must
// be the same (and nothing may panic), whether the chunks were prepared
// or not.
func FuzzChunkPrep(f *testing.F) {
	body := manyFields(40, "k")
	for _, c := range []Command{
		cmd(f, CmdUpdate, "/big", body),
		cmd(f, CmdUpdate, "/", `{"zz":1,"10":2,"9":3,"a":{"b":1}}`),
		cmd(f, CmdSet, "/big", body),
		cmd(f, CmdSet, "/big", `{".priority":"p",".value":`+body+`}`),
		cmd(f, CmdUpdate, "/a/b", `{"x":null,"y":{".sv":"timestamp"},"z/w":1}`),
		cmd(f, CmdUpdate, "/big", `{"k0001":null,"q":null,"new":1,"z":{"y":2}}`),
		cmd(f, CmdUpdate, "/big", `{"q/.priority":5,"q/r":null,"z/y/x":1,"b/c":2,"a/b":3,"k0001/v":4}`),
		cmd(f, CmdUpdate, "/new", `{"b/c":2,"a/b":3,"x":null,"b/d":1}`),
		cmd(f, CmdUpdate, "/big", `{"k1001":null,"q/r":null,"z":1,`+body[1:]),
		cmd(f, CmdUpdate, "/big/q", `{"r":null,`+body[1:]),
		cmd(f, CmdUpdate, "/big", `{"kz":{".sv":{"increment":1}},"q":null,`+body[1:]),
		cmd(f, CmdUpdate, "/big", `{"x":`+body+`}`),
		cmd(f, CmdPush, "/big", body),
	} {
		p, ok := parsedTwin(c)
		if !ok {
			f.Fatalf("parse %s", c.Body)
		}
		f.Add(p.EncodeParsed(), uint16(5), true)
		f.Add(p.EncodeParsed(), uint16(333), false)
		for size := range uint16(6) {
			f.Add(p.EncodeParsed(), 60+size, true)
		}
	}
	f.Fuzz(func(t *testing.T, entry []byte, size uint16, between bool) {
		if k, err := EntryKind(entry); err != nil || k == CmdChunk || size == 0 || len(entry)/int(size) > 400 {
			return
		}
		if _, err := DecodeCommand(entry); errors.Is(err, ErrUnsupportedVersion) {
			return // stops a node either way (FuzzApply)
		}
		setup := Command{Kind: CmdSet, Body: []byte(`{"big":{"k0001":"old","q":{"r":1},".priority":2},"a":"leaf"}`)}
		// The write between the chunks, picked by the cut's size.
		others := []string{`{"other":3,"big/q":7}`, `{"big/k0001":null,"big/new":{"x":1}}`, `{"big/q":null,"big/k0001":null}`,
			`{"big/.priority":3,"big/z":1}`, `{"big":{"q":1,"x":{"y":2}}}`, `{"big/q/r":null,"big/k0002":{".sv":{"increment":1}}}`,
			`{"big/.priority":null}`, `{"big/k0001":null,"big/q":null,"big/n":1}`, `{"big":{"q":1,".priority":4}}`}
		other := Command{Kind: CmdUpdate, Body: []byte(others[int(size)%len(others)])}
		if size%2 == 1 {
			defer tinyRebaseBounds()() // every node large, every scan short
		}
		ref, got := New(), New()
		for _, m := range []*FSM{ref, got} {
			m.Apply(Entry{Index: 1, Term: 1, Command: true, Data: setup.Encode()})
		}
		if between {
			ref.Apply(Entry{Index: 2, Term: 1, Command: true, Data: other.Encode()})
		}
		want := ref.Apply(Entry{Index: 3, Term: 1, Command: true, Data: entry})
		logs := chunkLogs(ChunkID{9}, entry, int(size), 2, 1)
		if len(logs) < 2 {
			return
		}
		var r *ApplyResponse
		index := uint64(1)
		for i, l := range logs {
			if between && i == len(logs)/2 {
				index++
				got.Apply(Entry{Index: index, Term: 1, Command: true, Data: other.Encode()})
			}
			index++
			l.Index = index
			r = got.Apply(l)
		}
		if renderExport(got.Root()) != renderExport(ref.Root()) || got.Root().ETag() != ref.Root().ETag() {
			t.Fatalf("tree: chunked %.300s, one step %.300s", renderExport(got.Root()), renderExport(ref.Root()))
		}
		if fmt.Sprint(r.Err) != fmt.Sprint(want.Err) {
			t.Fatalf("error: chunked %v, one step %v", r.Err, want.Err)
		}
		gr, wr := r.Result, want.Result
		gr.Index, wr.Index = 0, 0
		if resultString(gr) != resultString(wr) {
			t.Fatalf("result: chunked %.300s, one step %.300s", resultString(gr), resultString(wr))
		}
	})
}

// TestTimestampsResolvedAppliesAlike: a command whose timestamps the
// proposer resolved applies exactly as the command itself, and a chunked
// one is then prepared.
func TestTimestampsResolvedAppliesAlike(t *testing.T) {
	ts := `{".sv":"timestamp"}`
	body := manyFields(200, "k")
	cases := []struct {
		c        Command
		prepared bool
	}{
		{parsedCmd(t, CmdUpdate, "/big", `{"t":`+ts+`,"o":{"a":`+ts+`,".priority":`+ts+`},"p":{".value":1,".priority":`+ts+`},`+body[1:]), true},
		{parsedCmd(t, CmdUpdate, "/big", `{"t":`+ts+`,"i":{".sv":{"increment":2}},"n":{".value":{".sv":{"increment":1}},".priority":`+ts+`},`+body[1:]), true},
		{parsedCmd(t, CmdUpdate, "/big", `{"a/.priority":`+ts+`,"a/b":`+ts+`,`+body[1:]), true},
		{parsedCmd(t, CmdSet, "/big", `{"t":`+ts+`,"o":{"a":`+ts+`,".priority":`+ts+`},"i":{".sv":{"increment":1.5}},`+body[1:]), true},
		{parsedCmd(t, CmdSet, "/big", `{".value":{"x":`+ts+`},".priority":`+ts+`}`), true},
	}
	setup := []string{`PUT /big {"i":5,"n":{".value":1,".priority":2},"a":{"b":1,".priority":"q"}}`}
	for i, tc := range cases {
		resolved, ok := tc.c.WithTimestampsResolved()
		if !ok {
			t.Fatalf("case %d: no timestamps found", i)
		}
		var got [2]string
		for j, c := range []Command{tc.c, resolved} {
			f := New()
			applySetup(t, f, 1, setup[0])
			var evs []Event
			f.SetEventSink(func(ev []Event) { evs = append(evs, ev...) })
			r := f.Apply(Entry{Index: 2, Term: 1, Command: true, Data: c.EncodeParsed()})
			got[j] = fmt.Sprintf("%s %s %v %s", renderExport(f.Root()), f.Root().ETag(), r.Err, resultString(r.Result)) + eventsString(evs)
		}
		if got[0] != got[1] {
			t.Fatalf("case %d:\n as sent   %.400s\n resolved  %.400s", i, got[0], got[1])
		}
		entry := resolved.EncodeParsed()
		checkPrepMatches(t, prepCase{name: fmt.Sprint(i), setup: setup, command: resolved, prepared: tc.prepared}, entry, len(entry)/3)
	}
}
