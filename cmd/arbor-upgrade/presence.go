package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// presencePath is where the upgrade's onDisconnect operation writes the
// time it ran.
const presencePath = formatsRoot + "/presence"

// openPresence connects to node as admin (the SDKs' /.ws) and registers
// a set of presencePath to the time the operation runs: once every node
// runs the new release, its registration is replicated state (entry
// format 2), carried by snapshots (format 2) across a node's restart, and
// runs when the connection ends.
func openPresence(ctx context.Context, admin adminClient, node string) (*client.RealtimeConn, error) {
	p, status, err := tryPresence(ctx, admin, node)
	if err == nil && status != "ok" {
		p.Close()
		err = fmt.Errorf("%s: o: status %q, want ok", node, status)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// tryPresence connects to node as admin and asks for the onDisconnect
// operation; it returns the connection and the answer's status.
func tryPresence(ctx context.Context, admin adminClient, node string) (*client.RealtimeConn, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*requestTimeout)
	defer cancel()
	p, err := admin.DialRealtime(ctx, node, "arbor")
	if err != nil {
		return nil, "", err
	}
	status, err := p.Do(ctx, "o", map[string]any{"p": presencePath, "d": map[string]any{".sv": "timestamp"}})
	if err != nil {
		p.Close()
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
		p.Close()
		answers = append(answers, id+" "+status)
		if status != "unavailable" {
			errs = append(errs, fmt.Errorf("%s answered %q, want unavailable", id, status))
		}
	}
	r.crossed(phase, "onDisconnect (o) on an upgraded node answers unavailable", strings.Join(answers, ", "), errors.Join(errs...))
}

// checkPresenceRan closes the connection and checks, through via, that
// its onDisconnect operation ran once, at a time after the close.
func (r *result) checkPresenceRan(ctx context.Context, o options, admin adminClient, p *client.RealtimeConn, holder, via, phase string) {
	closed := time.Now()
	p.Close()
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
