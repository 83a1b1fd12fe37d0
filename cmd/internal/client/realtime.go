package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/coder/websocket"
)

// RealtimeConn is one connection of the realtime protocol (/.ws, the
// SDKs'), authenticated as admin: the test tools send requests on it and
// read their answers' status.
type RealtimeConn struct {
	ws   *websocket.Conn
	done chan struct{}
	err  error // why the connection ended; set before done is closed

	mu      sync.Mutex
	next    int
	waiting map[int]chan string
}

// realtimeReadLimit bounds one message from the server; the tools' answers
// are small and they listen to nothing.
const realtimeReadLimit = 1 << 20

// DialRealtime connects to node's realtime protocol for database ns and
// authenticates with the admin secret (gauth).
func (c *Client) DialRealtime(ctx context.Context, node, ns string) (*RealtimeConn, error) {
	hc, url, secret, err := c.Realtime(node, ns)
	if err != nil {
		return nil, err
	}
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("%s: dial /.ws: %w", node, err)
	}
	ws.SetReadLimit(realtimeReadLimit)
	rc := &RealtimeConn{ws: ws, done: make(chan struct{}), next: 1, waiting: map[int]chan string{}}
	go rc.read()
	if status, err := rc.Do(ctx, "gauth", map[string]any{"cred": secret}); err != nil || status != "ok" {
		rc.ws.CloseNow()
		return nil, fmt.Errorf("%s: gauth: status %q, %w", node, status, err)
	}
	return rc, nil
}

// read takes every message from the server until the connection ends,
// handing answers to the requests that wait for them.
func (rc *RealtimeConn) read() {
	defer close(rc.done)
	for {
		_, msg, err := rc.ws.Read(context.Background())
		if err != nil {
			rc.err = err
			return
		}
		var m struct {
			T string `json:"t"`
			D struct {
				R int `json:"r"`
				B struct {
					S string `json:"s"`
				} `json:"b"`
			} `json:"d"`
		}
		if json.Unmarshal(msg, &m) != nil || m.T != "d" || m.D.R == 0 {
			continue // a keep-alive, the hello, a push
		}
		rc.mu.Lock()
		ch := rc.waiting[m.D.R]
		delete(rc.waiting, m.D.R)
		rc.mu.Unlock()
		if ch != nil {
			ch <- m.D.B.S
		}
	}
}

// errRealtimeEnded answers a request whose connection ended first.
var errRealtimeEnded = errors.New("the realtime connection ended")

// Do sends one request and returns its answer's status.
func (rc *RealtimeConn) Do(ctx context.Context, action string, body any) (string, error) {
	ch := make(chan string, 1)
	rc.mu.Lock()
	r := rc.next
	rc.next++
	rc.waiting[r] = ch
	rc.mu.Unlock()
	b, err := json.Marshal(map[string]any{"t": "d", "d": map[string]any{"r": r, "a": action, "b": body}})
	if err != nil {
		return "", err
	}
	if err := rc.ws.Write(ctx, websocket.MessageText, b); err != nil {
		return "", fmt.Errorf("%s: %w", action, err)
	}
	select {
	case s := <-ch:
		return s, nil
	case <-rc.done:
		return "", fmt.Errorf("%s: %w: %w", action, errRealtimeEnded, rc.err)
	case <-ctx.Done():
		rc.mu.Lock()
		delete(rc.waiting, r) // an answer after this is dropped
		rc.mu.Unlock()
		return "", fmt.Errorf("%s: %w", action, ctx.Err())
	}
}

// Done is closed once the connection ended.
func (rc *RealtimeConn) Done() <-chan struct{} { return rc.done }

// Err says why the connection ended, once Done is closed.
func (rc *RealtimeConn) Err() error {
	select {
	case <-rc.done:
		return rc.err
	default:
		return nil
	}
}

// Close ends the connection as a client leaving does, and waits (within
// the library's close timeout) until it has ended.
func (rc *RealtimeConn) Close() {
	_ = rc.ws.Close(websocket.StatusNormalClosure, "bye")
	<-rc.done
}
