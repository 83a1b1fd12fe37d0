package fsm

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
)

// bigFSM returns an FSM whose node /big has n children.
func bigFSM(tb testing.TB, n int) *testFSM {
	tb.Helper()
	f := newTestFSM()
	const batch = 10000
	for i := 0; i < n; i += batch {
		var sb strings.Builder
		sb.WriteByte('{')
		for j := i; j < i+batch && j < n; j++ {
			if j > i {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `"k%07d":%d`, j, j)
		}
		sb.WriteByte('}')
		if _, err := f.apply(Command{Kind: CmdUpdate, Path: tree.Path{"big"}, Body: []byte(sb.String())}); err != nil {
			tb.Fatal(err)
		}
	}
	return f
}

func BenchmarkApplySetDepth5(b *testing.B) {
	f := bigFSM(b, 10000)
	c := Command{Kind: CmdSet, Path: tree.Path{"a", "b", "c", "d", "e"}, Body: []byte(`{"name":"x","n":1}`)}
	data := mustEncode(c)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.index++
		f.Apply(Entry{Index: f.index, Command: true, Data: data})
	}
}

func BenchmarkApplyPushInto1MChildren(b *testing.B) {
	f := bigFSM(b, 1_000_000)
	c := Command{Kind: CmdPush, Path: tree.Path{"big"}, Body: []byte(`{"msg":"hello","n":1}`), Now: 1700000000000}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Now++
		f.index++
		f.Apply(Entry{Index: f.index, Command: true, Data: mustEncode(c)})
	}
}

func BenchmarkApplyPatch100Fields(b *testing.B) {
	f := bigFSM(b, 10000)
	var sb strings.Builder
	sb.WriteByte('{')
	for i := 0; i < 100; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"u%02d/name":"n%d","u%02d/score":%d`, i, i, i, i)
	}
	sb.WriteByte('}')
	data := mustEncode(Command{Kind: CmdUpdate, Path: tree.Path{"users"}, Body: []byte(sb.String())})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.index++
		f.Apply(Entry{Index: f.index, Command: true, Data: data})
	}
}

// BenchmarkSnapshot1MWhileWriting takes Snapshot() and Persist of a
// 1,000,000-leaf tree while another goroutine keeps applying writes, and
// reports the longest time any single Apply took (the stall). The writer is
// paced at 20,000 applies/s, above the ~13,000 entries/s raft commits on
// this kind of machine, so the figure is what a real node would see.
// BenchmarkApplyStallBaseline is the same writer without snapshots: the
// difference between the two is what snapshotting costs the write path.
func BenchmarkSnapshot1MWhileWriting(b *testing.B) { benchStall(b, true) }

// BenchmarkApplyStallBaseline measures the same paced writer without snapshots.
func BenchmarkApplyStallBaseline(b *testing.B) { benchStall(b, false) }

func benchStall(b *testing.B, snapshots bool) {
	f := bigFSM(b, 1_000_000)
	var (
		stop     atomic.Bool
		maxStall atomic.Int64
		wg       sync.WaitGroup
		mu       sync.Mutex // raft never runs Apply and Snapshot concurrently
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := Command{Kind: CmdSet, Path: tree.Path{"hot", "x"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for i := 0; !stop.Load() && i < 10_000_000; i++ {
			if i%20 == 0 {
				<-tick.C // 20 applies per millisecond at most
			}
			c.Body = []byte(fmt.Sprint(i))
			start := time.Now()
			mu.Lock()
			f.index++
			f.Apply(Entry{Index: f.index, Command: true, Data: mustEncode(c)})
			mu.Unlock()
			if d := time.Since(start).Nanoseconds(); d > maxStall.Load() {
				maxStall.Store(d)
			}
		}
	}()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !snapshots {
			time.Sleep(150 * time.Millisecond) // the writer runs alone for as long as a Persist takes
			continue
		}
		mu.Lock()
		snap, err := f.Snapshot()
		mu.Unlock()
		if err != nil {
			b.Fatal(err)
		}
		if err := snap.Persist(&discardSink{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	stop.Store(true)
	wg.Wait()
	b.ReportMetric(float64(maxStall.Load())/1e6, "max-apply-stall-ms")
}
