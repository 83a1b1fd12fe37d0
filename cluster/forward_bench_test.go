package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm"
	"github.com/arbordb/arbor/fsm/tree"
)

// forwardBodies are a PUT of a 100-child object and a PATCH of 100 fields
// (~4 KB each): large enough that parsing and rendering show next to the
// fsync of a one-entry commit.
func forwardBodies() (put, patch []byte) {
	var p, u strings.Builder
	p.WriteString("{")
	u.WriteString("{")
	for i := range 100 {
		if i > 0 {
			p.WriteString(",")
			u.WriteString(",")
		}
		fmt.Fprintf(&p, `"k%03d":{"name":"user %d","n":%d,"ok":true}`, i, i, i)
		fmt.Fprintf(&u, `"k%03d":{"name":"user %d","n":%d}`, i, i, i*7)
	}
	p.WriteString("}")
	u.WriteString("}")
	return []byte(p.String()), []byte(u.String())
}

// BenchmarkForwardedWrite is a write taken by a follower and forwarded to
// the leader of an in-process three-node cluster: the follower's parse,
// the forward round trip, the leader's handling, commit (bolt fsync) and
// Apply on every replica, and the answer back.
func BenchmarkForwardedWrite(b *testing.B) {
	put, patch := forwardBodies()
	for _, bc := range []struct {
		name string
		kind fsm.CommandKind
		body []byte
	}{{"PUT", fsm.CmdSet, put}, {"PATCH", fsm.CmdUpdate, patch}} {
		b.Run(bc.name, func(b *testing.B) {
			c := newTestCluster(b, 3, func(cfg *Config) { cfg.WriteTimeout = 10 * time.Second })
			f := c.follower(c.waitLeader())
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				cmd := forwardedCommand(b, bc.kind, fmt.Sprintf("/bench/%d", i%64), bc.body)
				if _, err := f.Propose(context.Background(), cmd, fsm.AnswerOptions{}); err != nil {
					b.Fatalf("forwarded %s: %v", bc.name, err)
				}
			}
		})
	}
}

// forwardedCommand builds the command the HTTP layer would: the body
// validated once on the node that took the request.
func forwardedCommand(b *testing.B, kind fsm.CommandKind, path string, body []byte) fsm.Command {
	c := fsm.Command{Kind: kind, Path: mustPath(path), Body: body, Parsed: true, Now: time.Now().UnixMilli()}
	var err error
	if kind == fsm.CmdUpdate {
		c.Fields, err = tree.ParseUpdate(body, tree.MaxDepth-2)
	} else {
		c.Value, err = tree.ParseBody(body, tree.MaxDepth-2)
	}
	if err != nil {
		b.Fatal(err)
	}
	return c
}
