package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/arbordb/arbor/fsm"
)

// Development mode (--dev) listens for Raft and gossip on the loopback
// interface unless told otherwise: a development node has no peers, and
// its cluster ports must not be open to the network it runs on.
const (
	devRaftAddr   = "127.0.0.1:8300"
	devGossipAddr = "127.0.0.1:8301"
)

// applyDevDefaults moves the cluster listeners of a --dev node to the
// loopback interface when neither the command line nor the environment
// (both already applied to fs) chose an address.
func (c *serveConfig) applyDevDefaults(fs *flag.FlagSet) {
	if !c.Dev {
		return
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["raft-addr"] {
		c.RaftAddr = devRaftAddr
	}
	if !set["gossip-addr"] {
		c.GossipAddr = devGossipAddr
	}
}

// devOpenRules is what puts a --dev node back to open rules: the rules a
// node without any behaves by, set by the admin --dev accepts.
const devOpenRules = `curl -k -X PUT -H 'Authorization: Bearer owner' %s/.settings/rules.json -d '{"rules":{".read":true,".write":true}}'`

// announceDevNode tells the developer, once the node is ready (its log
// replayed, so the rules in force are known), whether the rules are
// open — only when none were ever set — or this data directory's own
// rules apply, and where the node is with a first command to try.
func announceDevNode(ctx context.Context, ready func(context.Context) error, rules func() *fsm.Rules, url string, logger *slog.Logger, poll, maxWait time.Duration) {
	if !waitUntilReady(ctx, ready, poll, maxWait) {
		return
	}
	if r := rules(); r.IsDefault() {
		logger.Warn("development mode: security rules are open to everyone until rules are set; never use --dev in production")
	} else {
		logger.Info("development mode: this data directory has security rules, and they apply (--dev opens only a database that never had any); "+
			"to open everything again run the command below, or start with an empty --data-dir",
			"rules_set_at_index", r.Index, "reset", fmt.Sprintf(devOpenRules, url))
	}
	logger.Info("development node ready: "+url, "try", "curl -k "+url+"/.json")
}

// devURL is the https URL a developer on this machine reaches addr (the
// address the HTTPS listener got) at: localhost for a listener on every
// interface or on loopback, which the generated certificate names.
func devURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "https://" + addr
	}
	if ip := net.ParseIP(host); ip != nil && (ip.IsUnspecified() || ip.IsLoopback()) {
		host = "localhost"
	}
	return "https://" + net.JoinHostPort(host, port)
}
