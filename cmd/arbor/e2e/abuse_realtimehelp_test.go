//go:build abuse

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Helpers of the realtime-protocol probes (abuse_realtime_test.go): a raw
// client that sends whatever it is told, frame by frame, and reports how
// the server ended the connection; and the checks every realtime probe
// ends with.

// rtRaw is a realtime connection driven frame by frame.
type rtRaw struct {
	ws *websocket.Conn
}

// rtDialRaw opens /.ws on n through hc (nil: the node's own client) and
// reads the hello.
func rtDialRaw(ctx context.Context, hc *http.Client, n *Node) (*rtRaw, error) {
	if hc == nil {
		hc = &http.Client{Transport: n.Client().Transport}
	}
	ws, _, err := websocket.Dial(ctx, "wss://"+n.Addr()+"/.ws?v=5&ns=arbor", &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		return nil, err
	}
	ws.SetReadLimit(64 << 20)
	c := &rtRaw{ws: ws}
	m, err := c.next(ctx)
	if err != nil {
		ws.CloseNow()
		return nil, fmt.Errorf("hello: %w", err)
	}
	if !strings.HasPrefix(m, `{"t":"c","d":{"t":"h"`) {
		ws.CloseNow()
		return nil, fmt.Errorf("hello: %.200s", m)
	}
	return c, nil
}

// next reads one message: a frame, or the frames a count frame announces
// put together.
func (c *rtRaw) next(ctx context.Context) (string, error) {
	_, b, err := c.ws.Read(ctx)
	if err != nil || len(b) > 6 {
		return string(b), err
	}
	n, perr := strconv.Atoi(string(b))
	if perr != nil || n < 1 {
		return string(b), nil
	}
	var msg strings.Builder
	for range n {
		_, f, err := c.ws.Read(ctx)
		if err != nil {
			return "", err
		}
		msg.Write(f)
	}
	return msg.String(), nil
}

// send writes one text frame.
func (c *rtRaw) send(ctx context.Context, text string) error {
	return c.ws.Write(ctx, websocket.MessageText, []byte(text))
}

// request renders request r of action a with body b.
func rtRequest(r int, a string, b any) string {
	m, err := json.Marshal(map[string]any{"t": "d", "d": map[string]any{"r": r, "a": a, "b": b}})
	if err != nil {
		panic(err)
	}
	return string(m)
}

// answer reads frames until the answer to request r, and returns its
// status and data; pushes and other answers are counted in pushes.
func (c *rtRaw) answer(ctx context.Context, r int) (status string, data json.RawMessage, pushes int, err error) {
	for {
		text, err := c.next(ctx)
		if err != nil {
			return "", nil, pushes, err
		}
		var m struct {
			T string `json:"t"`
			D struct {
				R *int `json:"r"`
				B struct {
					S string          `json:"s"`
					D json.RawMessage `json:"d"`
				} `json:"b"`
			} `json:"d"`
		}
		if json.Unmarshal([]byte(text), &m) != nil || m.T != "d" || m.D.R == nil || *m.D.R != r {
			pushes++
			continue
		}
		return m.D.B.S, m.D.B.D, pushes, nil
	}
}

// closedWith reads until the connection ends and returns the close code
// and reason the server sent (-1 when it ended without a close frame).
func (c *rtRaw) closedWith(ctx context.Context) (websocket.StatusCode, string) {
	for {
		if _, err := c.next(ctx); err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Reason
			}
			return -1, err.Error()
		}
	}
}

// rtGauge is a realtime gauge of n's /metrics.
func rtGauge(t *testing.T, n *Node, name string) int {
	t.Helper()
	return int(counterValue(t, n, name))
}

// realtimeClosedEverywhere waits until no node counts an open realtime
// connection nor a listen's subscription: whatever the probe opened left
// nothing behind.
func realtimeClosedEverywhere(t *testing.T, c *Cluster) {
	t.Helper()
	for _, n := range c.Nodes {
		var conns, listens int
		poll(t, time.Minute, "no realtime connection nor listen open on "+n.Name, func() bool {
			conns = rtGauge(t, n, "arbor_realtime_connections_open")
			listens = rtGauge(t, n, "arbor_realtime_listens_open")
			return conns == 0 && listens == 0
		}, func() string { return fmt.Sprintf("%d connections and %d listens open", conns, listens) })
	}
}

// rtAdmin authenticates c as admin (gauth) with request number r.
func (c *rtRaw) rtAdmin(ctx context.Context, r int) error {
	if err := c.send(ctx, rtRequest(r, "gauth", map[string]any{"cred": AdminSecret})); err != nil {
		return err
	}
	st, _, _, err := c.answer(ctx, r)
	if err == nil && st != "ok" {
		err = fmt.Errorf("gauth: %s", st)
	}
	return err
}
