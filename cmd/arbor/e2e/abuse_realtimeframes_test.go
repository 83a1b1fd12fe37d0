//go:build abuse

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Realtime-protocol probes of TestAbuse on frames and listens: huge and
// malformed frames, and one connection with more listens than its bound.

// rtFrameCase is one hostile sequence of frames on a fresh connection:
// it ends with the close code want, or (want 0) with answers of status
// answer to request 1 on a connection that still serves.
type rtFrameCase struct {
	name   string
	send   func(ctx context.Context, c *rtRaw) error
	want   websocket.StatusCode
	answer string
}

// rtFill sends a count frame announcing count frames, then frames of
// 16 KiB until the server stops taking them or total bytes went.
func rtFill(count string, total int) func(ctx context.Context, c *rtRaw) error {
	return func(ctx context.Context, c *rtRaw) error {
		if err := c.send(ctx, count); err != nil {
			return err
		}
		frame := strings.Repeat("x", 16<<10)
		for sent := 0; sent < total; sent += len(frame) {
			if err := c.send(ctx, frame); err != nil {
				return nil // closed by the server: as intended
			}
		}
		return nil
	}
}

// rtFrames sends each frame as text.
func rtFrames(frames ...string) func(ctx context.Context, c *rtRaw) error {
	return func(ctx context.Context, c *rtRaw) error {
		for _, f := range frames {
			if err := c.send(ctx, f); err != nil {
				return err
			}
		}
		return nil
	}
}

// rtFrameCases are the hostile frames probeRealtimeFrames sends. The
// node's message bound is 16 MiB (or its --max-body-bytes, if larger).
var rtFrameCases = []rtFrameCase{
	{"a 40 MiB message in 16 KiB frames", rtFill("2560", 40<<20), websocket.StatusMessageTooBig, ""},
	{"a count frame announcing 999,999 frames", rtFill("999999", 40<<20), websocket.StatusMessageTooBig, ""},
	{"one 64 MiB frame", func(ctx context.Context, c *rtRaw) error {
		_ = c.send(ctx, strings.Repeat("y", 64<<20)) // the server may close before it is all sent
		return nil
	}, websocket.StatusMessageTooBig, ""},
	{"bad JSON", rtFrames(`{"t":"d","d":{`), websocket.StatusProtocolError, ""},
	{"a count of seven digits", rtFrames("1234567"), websocket.StatusProtocolError, ""},
	{"a negative count", rtFrames("-1"), websocket.StatusProtocolError, ""},
	{"a count, then parts that are no JSON", rtFrames("2", `{"t":"d",`, `"d":}`), websocket.StatusProtocolError, ""},
	{"a binary frame", func(ctx context.Context, c *rtRaw) error {
		return c.ws.Write(ctx, websocket.MessageBinary, []byte(`{"t":"c","d":{"t":"p","d":{}}}`))
	}, websocket.StatusUnsupportedData, ""},
	{"text that is not UTF-8", rtFrames("{\"t\":\"d\",\"d\":{\"r\":1,\"a\":\"s\",\"b\":{\"x\":\"\xff\xfe\"}}}"), websocket.StatusProtocolError, ""},
	{"a layer that is a number", rtFrames(`{"t":5,"d":{}}`), websocket.StatusProtocolError, ""},
	{"a payload that is a list", rtFrames(`{"t":"d","d":[]}`), websocket.StatusProtocolError, ""},
	{"a request number that is a string", rtFrames(`{"t":"d","d":{"r":"one","a":"s","b":{}}}`), websocket.StatusProtocolError, ""},
	{"a body that is a string", rtFrames(`{"t":"d","d":{"r":1,"a":"q","b":"x"}}`), websocket.StatusProtocolError, ""},
	{"a control message without a type", rtFrames(`{"t":"c","d":{}}`), websocket.StatusProtocolError, ""},
	{"a path that is a number", rtFrames(`{"t":"d","d":{"r":1,"a":"q","b":{"p":5}}}`), 0, "invalid_data"},
	{"an unknown action", rtFrames(`{"t":"d","d":{"r":1,"a":"zz","b":{}}}`), 0, "invalid_data"},
	{"a query of wrong types", rtFrames(`{"t":"d","d":{"r":1,"a":"q","b":{"p":"/ws/x","q":{"l":"ten","sp":{}},"t":1}}}`), 0, "invalid_data"},
	{"an update that is a number", rtFrames(`{"t":"d","d":{"r":1,"a":"m","b":{"p":"/ws/x","d":5}}}`), 0, "invalid_data"},
	{"an unknown server value", rtFrames(`{"t":"d","d":{"r":1,"a":"p","b":{"p":"/ws/x","d":{".sv":"nope"}}}}`), 0, "invalid_data"},
	{"a hash that is a number", rtFrames(`{"t":"d","d":{"r":1,"a":"p","b":{"p":"/ws/x","d":1,"h":5}}}`), 0, "invalid_data"},
}

// probeRealtimeFrames: every case of rtFrameCases on a fresh admin
// connection, through the leader and then a follower. Each ends with the
// close code that names the fault, or an error answer on a connection
// that still answers a ping; nothing panics, the node's memory stays
// bounded, and the canary keeps its bound.
func probeRealtimeFrames(t *testing.T, c *Cluster) {
	leader, follower, term := settled(t, c)
	for _, via := range []*Node{leader, follower} {
		name := "hostile realtime frames on " + via.Name
		k := canaryWindow(t, c)
		rss := sampleRSS(t, via)
		var got []string
		for _, fc := range rtFrameCases {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			res := rtFrameOnce(ctx, via, fc)
			cancel()
			got = append(got, fc.name+": "+res)
			if want := rtFrameWant(fc); res != want {
				t.Errorf("%s: %s: %s, want %s", name, fc.name, res, want)
			}
		}
		before, peak := rss.done()
		realtimeClosedEverywhere(t, c)
		k.finish(t, name)
		t.Logf("%s: RSS %d → peak %d MB\n  %s", name, before, peak, strings.Join(got, "\n  "))
		if grew := peak - before; grew > 256 {
			t.Errorf("%s: RSS grew %d MB (bound 256 MB: a few messages of the 16 MiB bound at once)", name, grew)
		}
		noPanics(t, c, name)
		term = healthy(t, c, name, term)
	}
}

// rtFrameWant is the outcome rtFrameOnce reports for a case that holds.
func rtFrameWant(fc rtFrameCase) string {
	if fc.want != 0 {
		return fmt.Sprintf("closed %d", fc.want)
	}
	return "answered " + fc.answer + ", then a pong"
}

// rtFrameOnce plays fc on a fresh admin connection to n.
func rtFrameOnce(ctx context.Context, n *Node, fc rtFrameCase) string {
	c, err := rtDialRaw(ctx, nil, n)
	if err != nil {
		return "dial: " + err.Error()
	}
	defer c.ws.CloseNow()
	if err := c.rtAdmin(ctx, 100); err != nil {
		return err.Error()
	}
	if err := fc.send(ctx, c); err != nil {
		return "send: " + err.Error()
	}
	if fc.want != 0 {
		code, reason := c.closedWith(ctx)
		if code != fc.want {
			return fmt.Sprintf("closed %d %q", code, reason)
		}
		return fmt.Sprintf("closed %d", code)
	}
	st, data, _, err := c.answer(ctx, 1)
	if err != nil {
		return "no answer: " + err.Error()
	}
	if st != fc.answer {
		return fmt.Sprintf("answered %s %s", st, data)
	}
	if err := c.send(ctx, `{"t":"c","d":{"t":"p","d":{}}}`); err != nil {
		return "ping: " + err.Error()
	}
	for {
		m, err := c.next(ctx)
		if err != nil {
			return "no pong: " + err.Error()
		}
		if strings.HasPrefix(m, `{"t":"c","d":{"t":"o"`) {
			return "answered " + st + ", then a pong"
		}
	}
}

// Sizes of probeRealtimeManyListens.
const (
	rtListenBound = 10_000 // realtime DefaultConfig's MaxListens
	rtListenExtra = 100    // listens past the bound, each refused
)

// probeRealtimeManyListens: one connection asks for 10,100 listens, each
// of a child of one location, without waiting for answers, through the
// leader and then a follower. The first 10,000 are served (data, then
// ok); the others are refused with too_big naming the bound, and the
// connection stays. Then one write changes every child: the client gets
// its 10,000 pushes, and the canary keeps its bound. Once it leaves,
// nothing stays open and the node's memory comes back.
func probeRealtimeManyListens(t *testing.T, c *Cluster) {
	leader, follower, term := settled(t, c)
	mustStatus(t, "setup", leader.Do(t, "PUT", "/ws/many.json?print=silent", rtChildren(0)), 204)
	for round, via := range []*Node{leader, follower} {
		name := fmt.Sprintf("%d listens on one connection on %s", rtListenBound+rtListenExtra, via.Name)
		waitApplied(t, via, appliedIndex(t, leader))
		k := canaryWindow(t, c)
		rss := sampleRSS(t, via)
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		cl, err := rtDialRaw(ctx, nil, via)
		if err != nil {
			cancel()
			t.Fatalf("%s: %v", name, err)
		}
		if err := cl.rtAdmin(ctx, 1); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		total := rtListenBound + rtListenExtra
		var sendErr atomic.Value
		start := time.Now()
		go func() {
			for i := range total {
				if err := cl.send(ctx, rtRequest(i+2, "q", map[string]any{"p": fmt.Sprintf("/ws/many/c%05d", i), "h": ""})); err != nil {
					sendErr.Store(err)
					return
				}
			}
		}()
		statuses := map[string]int{}
		var tooBig string
		pushes := 0
		for i := range total {
			st, data, p, err := cl.answer(ctx, i+2)
			if err != nil {
				t.Fatalf("%s: the answer to listen %d: %v (sending: %v)", name, i, err, sendErr.Load())
			}
			pushes += p
			statuses[st]++
			if st == "too_big" && tooBig == "" {
				tooBig = string(data)
			}
		}
		listened := time.Since(start)
		if statuses["ok"] != rtListenBound || statuses["too_big"] != rtListenExtra || pushes != rtListenBound ||
			!strings.Contains(tooBig, fmt.Sprint(rtListenBound)) {
			t.Errorf("%s: answers %v with %d data pushes, first refusal %s; want %d ok, each after its data, and %d too_big naming the bound",
				name, statuses, pushes, tooBig, rtListenBound, rtListenExtra)
		}
		if got := rtGauge(t, via, "arbor_realtime_listens_open"); got != rtListenBound {
			t.Errorf("%s: the node counts %d listens open, want %d", name, got, rtListenBound)
		}
		// One write that changes every child listened to.
		start = time.Now()
		mustStatus(t, name+": the write of every child", leader.Do(t, "PATCH", "/ws/many.json?print=silent", rtChildren(round+1)), 204)
		acked := time.Since(start)
		for got := 0; got < rtListenBound; got++ {
			m, err := cl.next(ctx)
			if err != nil {
				t.Fatalf("%s: %d of %d pushes of the write arrived: %v", name, got, rtListenBound, err)
			}
			if !strings.HasPrefix(m, `{"t":"d","d":{"a":"d","b":{"p":"/ws/many/c`) {
				t.Fatalf("%s: push %d: %.200s", name, got, m)
			}
		}
		pushed := time.Since(start)
		cl.ws.Close(websocket.StatusNormalClosure, "bye")
		cancel()
		realtimeClosedEverywhere(t, c)
		before, peak := rss.done()
		k.finish(t, name)
		t.Logf("%s: answered in %s (%v); a write of every child acknowledged in %s, its %d pushes in %s; RSS %d → peak %d MB",
			name, listened.Round(time.Millisecond), statuses, acked.Round(time.Millisecond), rtListenBound, pushed.Round(time.Millisecond), before, peak)
		if grew := peak - before; grew > 256 {
			t.Errorf("%s: RSS grew %d MB (bound 256 MB)", name, grew)
		}
		noPanics(t, c, name)
		term = healthy(t, c, name, term)
	}
	mustStatus(t, "cleanup", leader.Do(t, "DELETE", "/ws/many.json?print=silent", ""), 204)
}

// rtChildren is an object of rtListenBound children c00000… of value v.
func rtChildren(v int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range rtListenBound {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"c%05d":%d`, i, v)
	}
	b.WriteString("}")
	return b.String()
}
