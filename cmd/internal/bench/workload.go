package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// opKind is one kind of request a workload sends.
type opKind int

// The operations. Each target turns them into its own requests (see
// request.go); the histograms are kept per kind.
const (
	opWrite      opKind = iota // replace one key's value
	opReadLocal                // read one key from the serving node's state
	opReadLinear               // read one key through the read barrier
	opPush                     // add a value under a new unique key
	opPatchMulti               // set several keys in one atomic request
	opKindCount
)

// String names the kind in summaries and JSON.
func (k opKind) String() string {
	switch k {
	case opWrite:
		return "write"
	case opReadLocal:
		return "read-local"
	case opReadLinear:
		return "read-linearizable"
	case opPush:
		return "push"
	case opPatchMulti:
		return "patch-multi"
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// workloads lists the --workload values in the order run.sh reports them.
var workloads = []string{"write", "read-local", "read-linearizable", "mixed", "push", "patch-multi"}

// mixedWritePercent is the share of writes in the mixed workload; the rest
// are linearizable reads (Arbor's default consistency). 10 % writes is a
// read-heavy application such as a chat or a dashboard.
const mixedWritePercent = 10

// operation is one request to send: its kind and the keys it touches
// (one key, or fields consecutive keys for patch-multi; none for push).
type operation struct {
	kind opKind
	keys []int
	// seq numbers the pushes of one client so that etcd's stand-in for a
	// push (a put on a fresh key) never reuses a key.
	seq uint64
}

// opGenerator draws the operations of one client. It is not safe for
// concurrent use: every client has its own, seeded by its index, so a run
// is reproducible.
type opGenerator struct {
	workload string
	keys     int
	fields   int
	rng      *rand.Rand
	seq      uint64
	buf      []int
}

// newOpGenerator returns the generator of client number client.
func newOpGenerator(workload string, keys, fields, client int) *opGenerator {
	return &opGenerator{
		workload: workload,
		keys:     keys,
		fields:   fields,
		rng:      rand.New(rand.NewPCG(uint64(client), 0x61726265)),
		buf:      make([]int, 0, max(fields, 1)),
	}
}

// next returns the next operation. Its keys slice is reused by the next call.
func (g *opGenerator) next() operation {
	switch g.workload {
	case "write":
		return g.single(opWrite)
	case "read-local":
		return g.single(opReadLocal)
	case "read-linearizable":
		return g.single(opReadLinear)
	case "mixed":
		if g.rng.IntN(100) < mixedWritePercent {
			return g.single(opWrite)
		}
		return g.single(opReadLinear)
	case "push":
		g.seq++
		return operation{kind: opPush, keys: g.buf[:0], seq: g.seq}
	case "patch-multi":
		// Consecutive keys (wrapping) are distinct as long as fields ≤
		// keys, which validation guarantees: etcd refuses a transaction
		// that names a key twice.
		start := g.rng.IntN(g.keys)
		g.buf = g.buf[:0]
		for i := range g.fields {
			g.buf = append(g.buf, (start+i)%g.keys)
		}
		return operation{kind: opPatchMulti, keys: g.buf}
	}
	panic("bench: unknown workload " + g.workload) // validation rules this out
}

// single is an operation on one random key.
func (g *opGenerator) single(k opKind) operation {
	g.buf = append(g.buf[:0], g.rng.IntN(g.keys))
	return operation{kind: k, keys: g.buf}
}

// needsPreload reports whether a workload reads keys that should exist
// first: reading a missing key is cheaper than reading a value, on both
// Arbor and etcd, and would flatter both.
func needsPreload(workload string) bool {
	return workload == "read-local" || workload == "read-linearizable" || workload == "mixed"
}

// benchValue is the value every write stores: size printable bytes that
// need no escaping in JSON, so both targets carry exactly size bytes.
func benchValue(size int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b strings.Builder
	b.Grow(size)
	for i := range size {
		b.WriteByte(alphabet[i%len(alphabet)])
	}
	return b.String()
}
