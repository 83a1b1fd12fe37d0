package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

// nodes are the cluster's node ids, by ordinal: n3 is replaced first, as a
// StatefulSet replaces arbor-2 first.
var nodes = []string{"n1", "n2", "n3"}

// stopWait bounds a graceful stop; SPEC §10 promises 10 s, the rest is
// slack before the node is killed and the step fails.
const stopWait = 30 * time.Second

// backend runs the three nodes, as local processes or as containers.
type backend interface {
	// name is "process" or "docker".
	name() string
	// setup issues the certificates with the old release's `arbor certs
	// init` and starts every node on the old release.
	setup(ctx context.Context) error
	// addrs are the nodes' HTTPS APIs on 127.0.0.1.
	addrs() map[string]string
	// caFile is the CA the nodes' certificates chain to.
	caFile() string
	// dataDir is node's data directory on this machine (a container's
	// is bind-mounted), where its snapshots can be read.
	dataDir(node string) string
	// stop sends SIGTERM to node and waits for it to exit; an exit other
	// than 0 within stopWait is an error.
	stop(ctx context.Context, node string) error
	// startNew starts node on the new release with the same flags, id
	// and data, plus newReleaseFlags.
	startNew(ctx context.Context, node string) error
	// release asks the binary the running node was started from for its
	// release (`arbor version`).
	release(ctx context.Context, node string) (string, error)
	// cleanup removes everything setup created except the work
	// directory; safe after a failed setup and more than once.
	cleanup(ctx context.Context) error
}

// serveFlags are s's serve command line with the flags of every node:
// mutual TLS and gossip encryption as in production, bootstrap as a
// three-node cluster, production Raft timing, the admin secret.
func serveFlags(s testcluster.Serve, secret string) []string {
	s.Size, s.AdminSecret = len(nodes), secret
	return s.Args()
}

// parseRelease reads the release from `arbor version` output, whose first
// line is "arbor <release>".
func parseRelease(out string) (string, error) {
	first, _, _ := strings.Cut(out, "\n")
	rel, found := strings.CutPrefix(strings.TrimSpace(first), "arbor ")
	if !found || rel == "" {
		return "", fmt.Errorf("unexpected `arbor version` output %q", first)
	}
	return rel, nil
}
