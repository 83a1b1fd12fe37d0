package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// With --watch K the streams are not idle: stream i listens to
// <prefix>/w<i mod K>, and once all are open the command writes --rounds
// rounds, round r setting every w<k> to r in one PATCH of <prefix>. Each
// stream checks that it is sent 1, 2, … r in that order, each once: a
// value skipped counts as missing, one not above the last as stale.

// watchState is what one watching stream has seen.
type watchState struct {
	last    atomic.Int64 // the last round seen, 0 before any
	missing atomic.Int64
	stale   atomic.Int64
}

// note records round v.
func (st *watchState) note(v int64) {
	last := st.last.Load()
	switch {
	case v <= last:
		st.stale.Add(1)
		return
	case v > last+1:
		st.missing.Add(v - last - 1)
	}
	st.last.Store(v)
}

// readPuts reads r's events until it ends, noting in st every `put` of a
// number at the stream's own location ("path": "/").
func readPuts(r *bufio.Reader, st *watchState) error {
	event := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:") && event == "put":
			var m struct {
				Path string          `json:"path"`
				Data json.RawMessage `json:"data"`
			}
			if json.Unmarshal([]byte(strings.TrimPrefix(line, "data:")), &m) != nil || m.Path != "/" {
				continue
			}
			if v, err := strconv.ParseInt(string(m.Data), 10, 64); err == nil {
				st.note(v)
			}
		case line == "":
			event = ""
		}
	}
}

// writeRounds writes rounds rounds through the pool's first node, every
// interval, each PATCH retried (up to 10 times) on 503 as a client would
// (the same values again are safe to repeat). It returns how many were
// acknowledged, and why it stopped short.
func (p *pool) writeRounds(ctx context.Context, watch, rounds int, interval time.Duration) (int, error) {
	url := fmt.Sprintf("https://%s%s.json?print=silent", p.addrs[0], p.prefix)
	for r := 1; r <= rounds; r++ {
		fields := make(map[string]int, watch)
		for k := range watch {
			fields["w"+strconv.Itoa(k)] = r
		}
		body, err := json.Marshal(fields)
		if err != nil {
			return r - 1, err
		}
		if err := p.patch(ctx, url, body); err != nil {
			return r - 1, fmt.Errorf("round %d: %w", r, err)
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return r, ctx.Err()
		}
	}
	return rounds, nil
}

func (p *pool) patch(ctx context.Context, url string, body []byte) error {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPatch, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		if p.auth != "" {
			req.Header.Set("Authorization", "Bearer "+p.auth)
		}
		resp, err := p.client.Do(req)
		if err != nil {
			return err
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			return nil
		case resp.StatusCode == http.StatusServiceUnavailable && attempt < 10:
			time.Sleep(200 * time.Millisecond)
		default:
			return fmt.Errorf("PATCH: %s: %s", resp.Status, strings.TrimSpace(string(msg)))
		}
	}
}

// watchTotals sums what the watching streams saw.
type watchTotals struct {
	streams, complete  int
	missing, stale     int64
	behind, behindLast int64 // streams short of the last round, and the lowest round one of them saw
}

// totals sums the states against rounds acknowledged (a stream may see a
// later one whose write was not).
func totals(states []*watchState, rounds int) watchTotals {
	t := watchTotals{streams: len(states), behindLast: int64(rounds)}
	for _, st := range states {
		t.missing += st.missing.Load()
		t.stale += st.stale.Load()
		if last := st.last.Load(); last >= int64(rounds) {
			t.complete++
		} else {
			t.behind++
			t.behindLast = min(t.behindLast, last)
		}
	}
	return t
}

// waitComplete waits until every stream saw round rounds, or ctx ends.
func waitComplete(ctx context.Context, states []*watchState, rounds int) watchTotals {
	for {
		t := totals(states, rounds)
		if t.complete == t.streams {
			return t
		}
		select {
		case <-ctx.Done():
			return t
		case <-time.After(100 * time.Millisecond):
		}
	}
}
