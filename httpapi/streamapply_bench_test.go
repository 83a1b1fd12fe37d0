package httpapi

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// BenchmarkApplyWithRootStreams is the state machine's apply of a 16 MiB
// write while 100 streams watch the root: what the apply goroutine spends
// on them, with the event sink the server installs. It reports the apply
// time with and without the streams.
func BenchmarkApplyWithRootStreams(b *testing.B) {
	var sb strings.Builder
	sb.WriteByte('{')
	for i := 0; sb.Len() < 16<<20-64; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"k%07d":{"name":"user %d","score":%d,"tags":["a","b"]}`, i, i, i)
	}
	sb.WriteByte('}')
	value, err := tree.ParseBody([]byte(sb.String()), 32)
	if err != nil {
		b.Fatal(err)
	}
	c := fsm.Command{Kind: fsm.CmdSet, Path: tree.Path{"big"}, Value: value, Parsed: true}
	entry := c.Encode()
	for _, streams := range []int{0, 100} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			h := newHarness(b, nil, func(c *Config) { c.StreamBufferBytes = 1 << 30 })
			subs := make([]*subscriber, streams)
			for i := range subs {
				subs[i] = newSubscriber(nil, 1<<30, nil)
				h.s.hub.subscribe(subs[i])
			}
			var total time.Duration
			for i := range b.N {
				start := time.Now()
				h.fsm.f.Apply(fsm.Entry{Index: uint64(i + 1), Command: true, Data: entry})
				total += time.Since(start)
				for _, s := range subs {
					s.take()
				}
			}
			b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "apply-ms")
		})
	}
}
