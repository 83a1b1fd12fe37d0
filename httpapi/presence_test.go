package httpapi

import (
	"context"
	"crypto/rand"
	"log/slog"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// The operations are registered in the state machine, cancelled there,
// and made by the run End proposes, with the clock of the run.
func TestReplicatedDisconnects(t *testing.T) {
	db := newFSMDB()
	d := &replicatedDisconnects{db: db, node: "n1", run: "r1", now: func() time.Time { return testNow }, rand: rand.Reader, log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	op := func(path, body string) fsm.Command {
		v, err := tree.ParseBody([]byte(body), tree.MaxDepth)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := tree.SplitPath(path)
		return fsm.Command{Kind: fsm.CmdSet, Path: p, Parsed: true, Value: v, Now: 1}
	}
	for _, c := range []fsm.Command{op("/status/s1", `{"at":{".sv":"timestamp"}}`), op("/gone", `1`)} {
		if err := d.Register(ctx, "s1", c); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Cancel(ctx, "s1", tree.Path{"gone"}); err != nil {
		t.Fatal(err)
	}
	if n := db.f.DisconnectsOf(fsm.Holder{Node: "n1", Run: "r1", Session: "s1"}); n != 1 {
		t.Fatalf("%d operations registered, want 1", n)
	}
	if db.f.Root() != nil {
		t.Fatal("an operation ran while its session lives")
	}
	var closed []string
	d.closeSession = func(id string) { closed = append(closed, id) }
	db.f.SetEventSink(func(_ uint64, e []fsm.Event) {
		if len(e) == 0 {
			return // a batch that changed nothing
		}
		if rest := d.withoutDisconnectEvents(e); len(rest) != 1 || rest[0].Kind != fsm.EventPut {
			t.Errorf("events left for the streams: %+v", rest)
		}
	})
	d.End(ctx, "s1")
	if got := string(tree.AppendJSON(nil, db.f.Root(), tree.RenderOptions{})); got != `{"status":{"s1":{"at":1700000000000}}}` {
		t.Fatalf("after End: %s", got)
	}
	if len(closed) != 1 || closed[0] != "s1" {
		t.Fatalf("sessions closed: %v", closed)
	}
	d.ran([]fsm.Holder{{Node: "n1", Run: "an-earlier-run", Session: "s2"}, {Node: "n2", Run: "r1", Session: "s3"}})
	if len(closed) != 1 {
		t.Fatalf("closed another run's or node's sessions: %v", closed)
	}
}
