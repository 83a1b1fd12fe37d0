package main

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
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

// serveFlags are the flags of every node but the addresses: mutual TLS and
// gossip encryption from certDir as in production, bootstrap as a
// three-node cluster, production Raft timing, the admin secret.
func serveFlags(node, dataDir, certDir string, join []string, secret string) []string {
	return []string{"serve",
		"--node-id", node,
		"--data-dir", dataDir,
		"--join", strings.Join(join, ","),
		"--bootstrap-expect", strconv.Itoa(len(nodes)),
		"--tls-ca", certDir + "/ca.pem",
		"--tls-cert", certDir + "/" + node + ".pem",
		"--tls-key", certDir + "/" + node + "-key.pem",
		"--gossip-key", certDir + "/gossip.key",
		"--admin-secret", secret,
	}
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

// freePorts returns n distinct ports free for TCP and UDP on 127.0.0.1
// (gossip uses both). They are released before use; another process
// taking one meanwhile would show as a node failing to start.
func freePorts(n int) ([]int, error) {
	var ports []int
	var held []interface{ Close() error }
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	for attempt := 0; len(ports) < n && attempt < 100; attempt++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		held = append(held, ln)
		port := ln.Addr().(*net.TCPAddr).Port
		pc, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		held = append(held, pc)
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("found %d free ports of %d", len(ports), n)
	}
	return ports, nil
}
