package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// describeResponse renders an Apply response for comparison.
func describeResponse(a *ApplyResponse) string {
	if a == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%s|%s|%s|%d|%v", renderExport(a.Result.Value), a.Result.Name, a.Result.ETag, a.Result.Index, a.Err)
}

// describeEvents renders events for comparison.
func describeEvents(evs []Event) string {
	var b bytes.Buffer
	for _, e := range evs {
		fmt.Fprintf(&b, "%d %d %s %s", e.Index, e.Kind, e.Path, renderExport(e.Value))
		for _, f := range e.Fields {
			fmt.Fprintf(&b, " %s=%s", f.Path, renderExport(f.Value))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// entries encodes cmds as log entries from index 1, with a configuration
// entry (which ApplyBatch receives and Apply never does) every 17th.
func entries(cmds []Command) []Entry {
	var logs []Entry
	for _, c := range cmds {
		idx := uint64(len(logs) + 1)
		if idx%17 == 0 {
			logs = append(logs, Entry{Index: idx})
			idx++
		}
		logs = append(logs, Entry{Index: idx, Command: true, Data: mustEncode(c)})
	}
	return logs
}

// TestApplyBatchMatchesApply applies the same entries one by one and in
// batches of random sizes: responses, events (in commit order), the
// applied index and the snapshot must be identical.
func TestApplyBatchMatchesApply(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		logs := entries(randomCommands(seed, 300))
		one, batched := New(), New()
		var evOne, evBatched []Event
		one.SetEventSink(func(_ uint64, e []Event) { evOne = append(evOne, e...) })
		batched.SetEventSink(func(_ uint64, e []Event) { evBatched = append(evBatched, e...) })

		var respOne, respBatched []string
		for _, l := range logs {
			if l.Command {
				respOne = append(respOne, describeResponse(one.Apply(l)))
			} else {
				respOne = append(respOne, describeResponse(nil))
				next := *one.cur.Load()
				next.index = l.Index
				one.publish(&next, nil)
			}
		}
		r := rand.New(rand.NewSource(seed))
		for i := 0; i < len(logs); {
			n := min(1+r.Intn(70), len(logs)-i)
			out := batched.ApplyBatch(logs[i : i+n])
			if len(out) != n {
				t.Fatalf("seed %d: %d responses for %d entries", seed, len(out), n)
			}
			for _, o := range out {
				respBatched = append(respBatched, describeResponse(o))
			}
			if got, want := batched.AppliedIndex(), logs[i+n-1].Index; got != want {
				t.Fatalf("seed %d: applied index %d after a batch ending at %d", seed, got, want)
			}
			i += n
		}
		for i := range respOne {
			if respOne[i] != respBatched[i] {
				t.Fatalf("seed %d entry %d: response %q one by one, %q batched", seed, i, respOne[i], respBatched[i])
			}
		}
		if a, b := describeEvents(evOne), describeEvents(evBatched); a != b {
			t.Fatalf("seed %d: events differ:\n%s\nbatched:\n%s", seed, a, b)
		}
		if !bytes.Equal(snapshotBytes(t, one), snapshotBytes(t, batched)) {
			t.Fatalf("seed %d: snapshots differ", seed)
		}
	}
}

// TestApplyBatchStopsAtNewerEntry: an entry of a newer format in a batch
// stops the node as Apply does, with everything before it applied.
func TestApplyBatchStopsAtNewerEntry(t *testing.T) {
	f := New()
	good := Command{Kind: CmdSet, Path: tree.Path{"a"}, Body: []byte(`1`)}
	newer := mustEncode(good)
	newer[0] = CommandVersion + 1
	logs := []Entry{
		{Index: 1, Command: true, Data: mustEncode(good)},
		{Index: 2, Command: true, Data: newer},
		{Index: 3, Command: true, Data: mustEncode(good)},
	}
	defer func() {
		p := recover()
		err, ok := p.(error)
		var ue *UnsupportedEntryError
		if !ok || !errors.As(err, &ue) || ue.Index != 2 || !errors.Is(err, ErrUnsupportedVersion) {
			t.Fatalf("panic %v, want *UnsupportedEntryError for entry 2", p)
		}
		if f.AppliedIndex() != 1 || render(f.Root()) != `{"a":1}` {
			t.Fatalf("after the stop: index %d, tree %s; want 1 and the first write", f.AppliedIndex(), render(f.Root()))
		}
	}()
	f.ApplyBatch(logs)
}

// TestApplyBatchWakesWaiters: reads waiting for an index inside a batch
// are released when the batch is published.
func TestApplyBatchWakesWaiters(t *testing.T) {
	f := New()
	done := make(chan error, 1)
	go func() { done <- f.WaitApplied(t.Context(), 2) }()
	c := Command{Kind: CmdSet, Path: tree.Path{"a"}, Body: []byte(`1`)}
	f.ApplyBatch([]Entry{
		{Index: 1, Command: true, Data: mustEncode(c)},
		{Index: 2, Command: true, Data: mustEncode(c)},
		{Index: 3},
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if f.AppliedIndex() != 3 {
		t.Fatalf("applied index %d, want 3", f.AppliedIndex())
	}
}

// BenchmarkApplyBatch64 applies writes to 1,000 keys in batches of 64 (a
// busy leader's group commit), against BenchmarkApplyOneBy1 doing the
// same one entry at a time.
func BenchmarkApplyBatch64(b *testing.B) { benchApplyBatch(b, 64) }

// BenchmarkApplyOneBy1 is BenchmarkApplyBatch64 through Apply.
func BenchmarkApplyOneBy1(b *testing.B) { benchApplyBatch(b, 1) }

func benchApplyBatch(b *testing.B, size int) {
	f := New()
	logs := make([]Entry, 1024)
	for i := range logs {
		c := Command{Kind: CmdSet, Path: tree.Path{"bench", fmt.Sprintf("k%d", i%1000)}, Body: []byte(`"` + string(bytes.Repeat([]byte("x"), 100)) + `"`)}
		logs[i] = Entry{Command: true, Data: mustEncode(c)}
	}
	var index uint64
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(size, b.N-done)
		batch := make([]Entry, n)
		for i := range batch {
			index++
			l := logs[int(index)%len(logs)]
			l.Index = index
			batch[i] = l
		}
		if size == 1 {
			f.Apply(batch[0])
		} else {
			f.ApplyBatch(batch)
		}
		done += n
	}
}
