package httpapi

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/arbordb/arbor/fsm"
)

// TestWriteJudgedAgainWhenTheRulesChanged: a write the log refuses because
// the rules it was judged by were replaced before its turn
// (fsm.ErrRulesChanged, nothing applied) is judged again on a fresh state
// and proposed again; only a write whose rules keep changing is answered
// 503, after maxRejudgements more tries.
func TestWriteJudgedAgainWhenTheRulesChanged(t *testing.T) {
	for _, refusals := range []int{1, maxRejudgements, maxRejudgements + 1} {
		t.Run(fmt.Sprint(refusals), func(t *testing.T) {
			var (
				mu       sync.Mutex
				judged   []bool // fresh, per judgement
				proposed int
			)
			db := &fakeDB{
				judge: func(_ context.Context, c *fsm.Command, fresh bool) error {
					mu.Lock()
					defer mu.Unlock()
					judged = append(judged, fresh)
					return nil
				},
				propose: func(context.Context, fsm.Command) (fsm.Answer, error) {
					mu.Lock()
					defer mu.Unlock()
					if proposed++; proposed <= refusals {
						return fsm.Answer{}, fmt.Errorf("apply: %w", fsm.FromCode(fsm.Code(fsm.ErrRulesChanged), "forwarded"))
					}
					return fsm.Answer{Body: []byte(`1`)}, nil
				},
			}
			h := newHarness(t, db, nil)
			resp := h.do(req{method: "PUT", path: "/a.json", body: str(`1`), anon: true})
			mu.Lock()
			defer mu.Unlock()
			if refusals > maxRejudgements {
				want := errBody("Service unavailable: the security rules kept changing while the write waited; it was not applied")
				if resp.status != 503 || resp.body != want || proposed != maxRejudgements+1 {
					t.Fatalf("answer %d %q after %d proposals, want 503 %q after %d", resp.status, resp.body, proposed, want, maxRejudgements+1)
				}
			} else if resp.status != 200 || proposed != refusals+1 {
				t.Fatalf("answer %d %q after %d proposals", resp.status, resp.body, proposed)
			}
			if m, want := h.do(req{method: "GET", path: "/metrics"}), fmt.Sprintf("arbor_http_writes_rejudged_total %d\n", min(refusals, maxRejudgements)); !strings.Contains(m.body, want) {
				t.Errorf("/metrics lacks %q", want)
			}
			if len(judged) != proposed || judged[0] {
				t.Fatalf("judgements %v for %d proposals", judged, proposed)
			}
			for _, fresh := range judged[1:] {
				if !fresh {
					t.Fatalf("judged again on a state that may not have the new rules: %v", judged)
				}
			}
		})
	}
}
