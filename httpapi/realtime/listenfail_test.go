package realtime

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// noQuorumDB is an fsmDB whose linearizable reads fail, as a node's do
// while it cannot confirm its leader.
type noQuorumDB struct{ *fsmDB }

func (d noQuorumDB) Read(ctx context.Context, r fsm.Read) (fsm.ReadResult, error) {
	if r.Linearizable {
		return fsm.ReadResult{}, errors.New("leadership not confirmed by a quorum in time")
	}
	return d.fsmDB.Read(ctx, r)
}

// eagerEvents wakes every feed as soon as it is subscribed, as a change
// committed during the listen's read barrier does.
type eagerEvents struct{ *fsmDB }

func (e eagerEvents) Subscribe(loc tree.Path, as *fsm.Access, wake func()) (Feed, error) {
	f, err := e.fsmDB.Subscribe(loc, as, wake)
	if err == nil {
		wake()
	}
	return f, err
}

// A listen whose read fails after its feed woke the session is answered
// unavailable and leaves nothing behind: the session goes on serving, with
// no feed open.
func TestListenFailsAfterItsFeedWoke(t *testing.T) {
	db := newFSMDB()
	cfg := DefaultConfig()
	cfg.AdminSecrets = []string{"admin-secret"}
	cfg.Now = func() time.Time { return testNow }
	cfg.OpenIfUnset = true
	srv, err := New(cfg, Deps{DB: noQuorumDB{db}, Events: eagerEvents{db}, Tokens: fakeTokens{},
		Disconnects: NewLocalDisconnects(db, cfg.Now, slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, db: db, srv: srv, ts: httptest.NewServer(srv)}
	t.Cleanup(func() {
		srv.Close()
		r.ts.Close()
	})
	c := r.dial()
	for i := range 3 {
		if st, _, _ := c.do("q", map[string]any{"p": "/a", "h": ""}); st != statusUnavailable {
			t.Fatalf("listen %d answered %s, want %s", i, st, statusUnavailable)
		}
	}
	if st, _, _ := c.do("s", map[string]any{}); st != statusOK {
		t.Fatalf("the session after the failed listens: %s", st)
	}
	if n := db.feeds(); n != 0 {
		t.Fatalf("%d feeds open after the failed listens", n)
	}
}
