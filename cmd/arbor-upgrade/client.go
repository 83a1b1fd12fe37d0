package main

import (
	"context"
	"crypto/x509"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/testcluster"
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

// nodeStatus is the part of /status the test reads; the reference release
// lacks the release and commit, the last log index, the last snapshot and
// the Raft figures (read on new nodes only).
type nodeStatus = testcluster.Status

// status fetches node's /status.
func (c adminClient) status(ctx context.Context, node string) (nodeStatus, error) {
	return testcluster.GetStatus(ctx, c.Client, node)
}

// ready returns nil if node's /readyz answers 200, else what it said.
func (c adminClient) ready(ctx context.Context, node string) error {
	return testcluster.CheckReady(ctx, c.Client, node)
}
