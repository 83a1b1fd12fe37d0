package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// requestTimeout bounds one request: longer than a node's write timeout
// (5 s), so a node's own 503 arrives before the client gives up.
const requestTimeout = 10 * time.Second

// adminClient asks the nodes for their health, status and data as admin,
// over the chaos runner's HTTPS client (cmd/internal/client).
type adminClient struct{ *client.Client }

// clientConfig is how every client of a variant reaches the nodes at
// addrs: each node's certificate is checked against ca for the node's
// id, which arbor certs init puts in it.
func clientConfig(addrs map[string]string, ca *x509.CertPool, secret string) client.Config {
	c := client.Config{CA: ca, Secret: secret, Timeout: requestTimeout}
	for _, id := range nodes {
		c.Endpoints = append(c.Endpoints, client.Endpoint{Node: id, Addr: addrs[id]})
	}
	return c
}

// do sends one request to node and returns the status and body.
func (c adminClient) do(ctx context.Context, node, method, path, body string) (int, []byte, error) {
	r, err := c.Do(ctx, node, method, path, body)
	return r.Status, r.Body, err
}

// nodeStatus is the part of /status the test reads; every field exists in
// the reference release too, except the release and commit, the last log
// index, the last snapshot and the Raft figures (read on new nodes only).
type nodeStatus struct {
	NodeID       string   `json:"node_id"`
	Role         string   `json:"role"`
	Leader       string   `json:"leader"`
	Term         uint64   `json:"term"`
	CommitIndex  uint64   `json:"commit_index"`
	AppliedIndex uint64   `json:"applied_index"`
	LastLogIndex uint64   `json:"last_log_index"`
	Ready        bool     `json:"ready"`
	Health       string   `json:"health"`
	Versions     versions `json:"versions"`
	Members      []member `json:"members"`
	// LastSnapshot is the newest snapshot this node knows of (nil: none).
	LastSnapshot *struct {
		Index uint64 `json:"index"`
	} `json:"last_snapshot"`
	// Raft holds raft.Stats figures, e.g. last_snapshot_index: the
	// snapshot restored at start-up until a newer one is taken.
	Raft map[string]string `json:"raft"`
}

type member struct {
	ID       string    `json:"id"`
	Suffrage string    `json:"suffrage"`
	Health   string    `json:"health"`
	Versions *versions `json:"versions"`
}

type versions struct {
	EntryFormat    int    `json:"entry_format"`
	SnapshotFormat int    `json:"snapshot_format"`
	Release        string `json:"release"`
}

// status fetches node's /status.
func (c adminClient) status(ctx context.Context, node string) (nodeStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	code, body, err := c.do(ctx, node, http.MethodGet, "/status", "")
	if err != nil {
		return nodeStatus{}, err
	}
	if code != http.StatusOK {
		return nodeStatus{}, fmt.Errorf("/status: %d %s", code, strings.TrimSpace(string(body)))
	}
	var st nodeStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return nodeStatus{}, fmt.Errorf("/status: %w", err)
	}
	return st, nil
}

// ready returns nil if node's /readyz answers 200, else what it said.
func (c adminClient) ready(ctx context.Context, node string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	code, body, err := c.do(ctx, node, http.MethodGet, "/readyz", "")
	switch {
	case err != nil:
		return fmt.Errorf("/readyz: %w", err)
	case code != http.StatusOK:
		return fmt.Errorf("/readyz: %d %s", code, strings.TrimSpace(string(body)))
	}
	return nil
}
