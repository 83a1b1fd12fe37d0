package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// presencePath is where the upgrade's onDisconnect operation writes the
// time it ran.
const presencePath = formatsRoot + "/presence"

// presenceConn is a realtime-protocol connection (the SDKs' /.ws) as an
// admin, holding one onDisconnect operation: once every node runs the
// new release, its registration is replicated state (entry format 2),
// carried by snapshots (format 2) across a node's restart, and runs when
// the connection ends.
type presenceConn struct {
	ws   *websocket.Conn
	next int
}

// openPresence connects to node, authenticates as admin and registers
// a set of presencePath to the time the operation runs.
func openPresence(ctx context.Context, admin adminClient, node string) (*presenceConn, error) {
	p, status, err := tryPresence(ctx, admin, node)
	if err == nil && status != "ok" {
		p.ws.CloseNow()
		err = fmt.Errorf("%s: o: status %q, want ok", node, status)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// tryPresence connects to node as admin and asks for the onDisconnect
// operation; it returns the connection and the answer's status.
func tryPresence(ctx context.Context, admin adminClient, node string) (*presenceConn, string, error) {
	hc, url, secret, err := admin.Realtime(node, "arbor")
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*requestTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		return nil, "", fmt.Errorf("%s: dial /.ws: %w", node, err)
	}
	p := &presenceConn{ws: ws, next: 1}
	if status, err := p.do(ctx, "gauth", map[string]any{"cred": secret}); err != nil || status != "ok" {
		ws.CloseNow()
		return nil, "", fmt.Errorf("%s: gauth: status %q, %v", node, status, err)
	}
	status, err := p.do(ctx, "o", map[string]any{"p": presencePath, "d": map[string]any{".sv": "timestamp"}})
	if err != nil {
		ws.CloseNow()
		return nil, "", fmt.Errorf("%s: o: %w", node, err)
	}
	return p, status, nil
}

// checkPresenceGated asks every upgraded node of the mixed cluster for an
// onDisconnect operation: the onDisconnect commands need entry format 2,
// which the old members do not apply, so they are refused before the log
// and the answer is "unavailable" (httpapi/realtime/DESIGN.md).
func (r *result) checkPresenceGated(ctx context.Context, phase string, admin adminClient, upgraded []string) {
	var answers []string
	var errs []error
	for _, id := range upgraded {
		p, status, err := tryPresence(ctx, admin, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.ws.Close(websocket.StatusNormalClosure, "bye")
		answers = append(answers, id+" "+status)
		if status != "unavailable" {
			errs = append(errs, fmt.Errorf("%s answered %q, want unavailable", id, status))
		}
	}
	r.crossed(phase, "onDisconnect (o) on an upgraded node answers unavailable", strings.Join(answers, ", "), errors.Join(errs...))
}

// do sends one request and returns its answer's status, skipping the
// messages before it.
func (p *presenceConn) do(ctx context.Context, action string, body any) (string, error) {
	r := p.next
	p.next++
	b, err := json.Marshal(map[string]any{"t": "d", "d": map[string]any{"r": r, "a": action, "b": body}})
	if err != nil {
		return "", err
	}
	if err := p.ws.Write(ctx, websocket.MessageText, b); err != nil {
		return "", err
	}
	for {
		_, msg, err := p.ws.Read(ctx)
		if err != nil {
			return "", err
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
		if json.Unmarshal(msg, &m) == nil && m.T == "d" && m.D.R == r {
			return m.D.B.S, nil
		}
	}
}

// checkPresenceRan closes the connection and checks, through via, that
// its onDisconnect operation ran once, at a time after the close.
func (r *result) checkPresenceRan(ctx context.Context, o options, admin adminClient, p *presenceConn, holder, via, phase string) {
	closed := time.Now()
	p.ws.Close(websocket.StatusNormalClosure, "bye")
	var got string
	err := poll(ctx, o.StepTimeout, "the onDisconnect operation to run", func(ctx context.Context) error {
		code, body, err := admin.do(ctx, via, "GET", presencePath+".json", "")
		if err != nil {
			return err
		}
		if got = string(body); code != 200 || got == "null" {
			return fmt.Errorf("%s answers %d %s", via, code, got)
		}
		return nil
	})
	if err == nil {
		var at int64
		if jerr := json.Unmarshal([]byte(got), &at); jerr != nil || at < closed.UnixMilli() {
			err = fmt.Errorf("%s holds %s, want the time it ran, %d or later", presencePath, got, closed.UnixMilli())
		}
	}
	r.crossed(phase, "an onDisconnect operation registered on "+holder+" before the snapshot runs when its connection ends",
		fmt.Sprintf("%s = %s through %s", presencePath, got, via), err)
}
