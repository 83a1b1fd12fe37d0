// Package client talks HTTPS to the nodes of a chaos cluster: the
// workload's requests, and the runner's /readyz, /status and final reads.
package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// Endpoint is how the runner reaches one node's HTTPS API.
type Endpoint struct {
	Node string // node id, also the name its certificate carries
	Addr string // host:port on 127.0.0.1
}

// URL is the https URL of path on the endpoint.
func (e Endpoint) URL(path string) string {
	return "https://" + e.Addr + path
}

// Response is a node's answer.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Client sends requests to nodes, authenticated as admin. One Client
// holds one connection pool per node; each workload worker has its own,
// so a connection broken by a fault hurts one worker at a time.
type Client struct {
	secret  string
	timeout time.Duration
	https   map[string]*http.Client // by node
	eps     map[string]Endpoint
}

// Config is what every Client of a run shares.
type Config struct {
	Endpoints []Endpoint
	CA        *x509.CertPool
	Secret    string        // admin secret, sent as a Bearer token
	Timeout   time.Duration // per request, including reading the body
	// Dial, when set, opens the connections instead of a plain dialer:
	// the Kubernetes test (cmd/arbor-k8s) maps each pod's stable name
	// to the address the pod has now. Its context carries the 2 s dial
	// bound.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// LoadCA reads a PEM CA certificate file into a pool.
func LoadCA(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client: CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client: no certificate in %s", path)
	}
	return pool, nil
}

// dialTimeout bounds opening one connection.
const dialTimeout = 2 * time.Second

// New returns a client with its own connection pools.
func New(c Config) *Client {
	cl := &Client{secret: c.Secret, timeout: c.Timeout, https: map[string]*http.Client{}, eps: map[string]Endpoint{}}
	dial := (&net.Dialer{Timeout: dialTimeout}).DialContext
	if c.Dial != nil {
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, dialTimeout)
			defer cancel()
			return c.Dial(ctx, network, addr)
		}
	}
	for _, ep := range c.Endpoints {
		tr := &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: c.CA, ServerName: ep.Node, MinVersion: tls.VersionTLS12},
			DialContext:     dial,
			// One request at a time per worker: one connection is enough,
			// and fewer connections mean less lingering state per fault.
			MaxIdleConnsPerHost: 1,
			IdleConnTimeout:     30 * time.Second,
			TLSHandshakeTimeout: 3 * time.Second,
		}
		cl.https[ep.Node] = &http.Client{Transport: tr, Timeout: c.Timeout}
		cl.eps[ep.Node] = ep
	}
	return cl
}

// Close releases the idle connections.
func (c *Client) Close() {
	for _, h := range c.https {
		h.CloseIdleConnections()
	}
}

// Do sends one request to node. headers are name, value pairs. A
// transport error is returned as is; see NotSent.
func (c *Client) Do(ctx context.Context, node, method, path, body string, headers ...string) (Response, error) {
	h, ok := c.https[node]
	if !ok {
		return Response{}, fmt.Errorf("client: unknown node %q", node)
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.eps[node].URL(path), rd)
	if err != nil {
		return Response{}, fmt.Errorf("client: %w", err)
	}
	if c.secret != "" {
		req.Header.Set("Authorization", "Bearer "+c.secret)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := h.Do(req)
	if err != nil {
		return Response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		// The status arrived but not the body: for a write, the
		// outcome is as unknown as if nothing had arrived.
		return Response{Status: resp.StatusCode, Header: resp.Header}, fmt.Errorf("client: reading the body: %w", err)
	}
	return Response{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// NotSent reports whether err means the request certainly never reached
// the node: the TCP connection could not be made. Anything later (TLS,
// a dropped connection, a timeout) may have delivered it.
func NotSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// Realtime returns what a client of node's realtime protocol (/.ws)
// needs: an HTTP client with node's connection settings and no timeout
// (the WebSocket lives on), the WebSocket URL for database ns, and the
// admin secret to send with gauth.
func (c *Client) Realtime(node, ns string) (hc *http.Client, url, secret string, err error) {
	h, ok := c.https[node]
	if !ok {
		return nil, "", "", fmt.Errorf("client: unknown node %q", node)
	}
	return &http.Client{Transport: h.Transport}, "wss://" + c.eps[node].Addr + "/.ws?v=5&ns=" + ns, c.secret, nil
}
