package fsm

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
)

// The largest writes the default 16 MiB limit lets through (issue 19):
// Apply runs on the Raft apply loop, so every other read and write waits
// for it. Each case is measured stage by stage, as the write travels:
// parse (the proposing node, off the loop), wire encode (the proposing
// node), wire decode and apply (every node, on the loop: Apply decodes
// the entry itself). Run with
//
//	go test -run='^$' -bench=BigWrite -benchtime=3x ./fsm
//
// Besides wall time (ns/op), each reports cpu-ms/op, the process's CPU
// time (garbage collection included) per operation, which other
// processes sharing the machine disturb far less.

// bigKeysBody is {"k0000000":1,"k0000001":1,…} with n members.
func bigKeysBody(n int) []byte { return bigBody(n, false) }

// bigBody is bigKeysBody, with the values 0, 1, 2, … when distinct.
func bigBody(n int, distinct bool) []byte {
	var sb bytes.Buffer
	sb.Grow(n * 14)
	sb.WriteByte('{')
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		if distinct {
			fmt.Fprintf(&sb, `"k%07d":%d`, i, i)
		} else {
			fmt.Fprintf(&sb, `"k%07d":1`, i)
		}
	}
	sb.WriteByte('}')
	return sb.Bytes()
}

// bigWriteCase is one large write.
type bigWriteCase struct {
	name string
	kind CommandKind
	body func() []byte
}

var bigWriteCases = []bigWriteCase{
	// The PATCH: a million one-key fields at one path.
	{"patch1M", CmdUpdate, func() []byte { return bigKeysBody(1_000_000) }},
	// The same with a million different values: a million leaves to make.
	{"patch1Mints", CmdUpdate, func() []byte { return bigBody(1_000_000, true) }},
	// A million two-key fields: a million new objects of one child each.
	{"patch1Mdeep", CmdUpdate, func() []byte {
		return bytes.ReplaceAll(bigKeysBody(1_000_000), []byte(`":1`), []byte(`/v":1`))
	}},
	{"put1M", CmdSet, func() []byte { return bigKeysBody(1_000_000) }},
	// An import: the million keys one level down.
	{"put1Mnested", CmdSet, func() []byte { return append(append([]byte(`{"users":`), bigKeysBody(1_000_000)...), '}') }},
	{"string10M", CmdSet, func() []byte { return []byte(`"` + strings.Repeat("a", tree.MaxStringLen) + `"`) }},
	// The largest writes a cluster accepts (cluster/writelimit.go):
	// 16 MiB of JSON, as 16 strings or as records of 200,000 nodes.
	{"put16MiBStrings", CmdSet, func() []byte {
		var sb bytes.Buffer
		sb.WriteByte('{')
		for i := range 16 {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `"s%d":"%s"`, i, strings.Repeat("a", 1<<20-64))
		}
		sb.WriteByte('}')
		return sb.Bytes()
	}},
	{"put16MiBRecords", CmdSet, func() []byte {
		var sb bytes.Buffer
		sb.WriteByte('{')
		pad := strings.Repeat("x", 520)
		for i := range 24_999 {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `"user%07d":{"name":"User %d%s","email":"user%d@example.com","age":%d,"active":%t,"tags":["reader","writer"]}`,
				i, i, pad, i, 20+i%60, i%3 == 0)
		}
		sb.WriteByte('}')
		return sb.Bytes()
	}},
	// Half a million increments and timestamps: server values, resolved
	// as the write is applied.
	{"patch500kIncrements", CmdUpdate, func() []byte {
		return bytes.ReplaceAll(bigKeysBody(500_000), []byte(`":1`), []byte(`":{".sv":{"increment":1}}`))
	}},
	{"patch500kTimestamps", CmdUpdate, func() []byte {
		return bytes.ReplaceAll(bigKeysBody(500_000), []byte(`":1`), []byte(`":{".sv":"timestamp"}`))
	}},
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchCPU runs fn b.N times and reports the CPU time per run.
func benchCPU(b *testing.B, fn func(i int)) {
	b.ReportAllocs()
	runtime.GC()
	start := cpuTime()
	for i := 0; b.Loop(); i++ {
		fn(i)
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
}

func BenchmarkBigWrite(b *testing.B) {
	for _, bc := range bigWriteCases {
		b.Run(bc.name, func(b *testing.B) { benchBigWrite(b, bc) })
	}
}

func benchBigWrite(b *testing.B, bc bigWriteCase) {
	body := bc.body()
	path := tree.Path{"big"}
	parse := func() (Command, error) {
		c := Command{Kind: bc.kind, Path: path, Now: 1700000000000, Parsed: true}
		var err error
		if bc.kind == CmdUpdate {
			c.Fields, err = tree.ParseUpdate(body, tree.MaxDepth-len(path))
		} else {
			c.Value, err = tree.ParseBody(body, tree.MaxDepth-len(path))
		}
		return c, err
	}
	cmd, err := parse()
	if err != nil {
		b.Fatal(err)
	}
	data := cmd.Encode()
	b.Run("parse", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		benchCPU(b, func(int) {
			if _, err := parse(); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("encode", func(b *testing.B) {
		benchCPU(b, func(int) { _ = cmd.Encode() })
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		benchCPU(b, func(int) {
			if _, err := DecodeCommand(data); err != nil {
				b.Fatal(err)
			}
		})
	})
	// apply: the whole Apply of the entry (decode included) onto a tree
	// without /big; overwrite: onto one that holds the result already
	// (every key replaced, every old value removed); applyOnly: the
	// decoded command's apply alone, onto the empty tree.
	empty := &state{}
	filled, _, _, err := applyEntry(empty, data, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, st := range []struct {
		name string
		base *state
	}{{"apply", empty}, {"overwrite", filled}} {
		b.Run(st.name, func(b *testing.B) {
			f := New()
			benchCPU(b, func(i int) {
				f.cur.Store(st.base)
				if r := f.Apply(Entry{Index: uint64(i + 1), Command: true, Data: data}); r.Err != nil {
					b.Fatal(r.Err)
				}
			})
		})
	}
	decoded, err := DecodeCommand(data)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("applyOnly", func(b *testing.B) {
		benchCPU(b, func(int) {
			next := *empty
			c := decoded
			var err error
			if c.Kind == CmdUpdate {
				_, _, err = applyUpdate(&next, &c)
			} else {
				_, _, err = applySet(&next, &c)
			}
			if err != nil {
				b.Fatal(err)
			}
		})
	})
}
