package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// requestTimeout bounds one request: longer than a node's write timeout
// (5 s), so a node's own 503 arrives before the client gives up.
const requestTimeout = 10 * time.Second

// client talks HTTPS to the nodes as admin. Each load worker has its own,
// so a connection broken by a stopping node hurts one worker at a time.
type client struct {
	secret string
	addrs  map[string]string // node → host:port on 127.0.0.1
	https  map[string]*http.Client
}

// loadCA reads a PEM CA certificate.
func loadCA(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("CA: no certificate in %s", path)
	}
	return pool, nil
}

// newClient returns a client of the nodes at addrs. Each node's
// certificate is checked against ca for the node's id, which arbor certs
// init puts in it.
func newClient(addrs map[string]string, ca *x509.CertPool, secret string) *client {
	c := &client{secret: secret, addrs: addrs, https: map[string]*http.Client{}}
	for node := range addrs {
		c.https[node] = &http.Client{
			Timeout: requestTimeout,
			Transport: &http.Transport{
				TLSClientConfig:     &tls.Config{RootCAs: ca, ServerName: node, MinVersion: tls.VersionTLS12},
				DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
				MaxIdleConnsPerHost: 1,
				IdleConnTimeout:     30 * time.Second,
				TLSHandshakeTimeout: 3 * time.Second,
			},
		}
	}
	return c
}

// close drops the idle connections.
func (c *client) close() {
	for _, h := range c.https {
		h.CloseIdleConnections()
	}
}

// do sends one request to node and returns the status and body.
func (c *client) do(ctx context.Context, node, method, path, body string) (int, []byte, error) {
	h, found := c.https[node]
	if !found {
		return 0, nil, fmt.Errorf("unknown node %q", node)
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, "https://"+c.addrs[node]+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.secret)
	resp, err := h.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		// The status came but not the body: as unknown as no answer.
		return 0, nil, fmt.Errorf("reading the body: %w", err)
	}
	return resp.StatusCode, b, nil
}

// notSent reports whether err means the request never left: the TCP
// connection could not be made, so a write certainly had no effect.
func notSent(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "dial"
}

// nodeStatus is the part of /status the test reads; every field exists in
// the reference release too, except the release and commit.
type nodeStatus struct {
	NodeID       string   `json:"node_id"`
	Role         string   `json:"role"`
	Leader       string   `json:"leader"`
	Term         uint64   `json:"term"`
	CommitIndex  uint64   `json:"commit_index"`
	AppliedIndex uint64   `json:"applied_index"`
	Ready        bool     `json:"ready"`
	Health       string   `json:"health"`
	Versions     versions `json:"versions"`
	Members      []member `json:"members"`
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
func (c *client) status(ctx context.Context, node string) (nodeStatus, error) {
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
func (c *client) ready(ctx context.Context, node string) error {
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
