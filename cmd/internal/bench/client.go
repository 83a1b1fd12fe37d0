package bench

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"
)

// benchTLSConfig is the client side of TLS for every target: the system
// roots plus --ca (or extra, the bare handler's own certificate), or no
// verification with --insecure. ALPN offers only HTTP/1.1 so that Arbor,
// etcd and the bare handler are all measured over the same protocol.
func benchTLSConfig(caFile string, insecure bool, extra *x509.Certificate) (*tls.Config, error) {
	conf := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}, InsecureSkipVerify: insecure}
	if caFile == "" && extra == nil {
		return conf, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read --ca: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca %s holds no PEM certificate", caFile)
		}
	}
	if extra != nil {
		pool.AddCert(extra)
	}
	conf.RootCAs = pool
	return conf, nil
}

// newBenchHTTPClient returns the client of one simulated user: its own
// transport holding one keep-alive HTTP/1.1 connection, so N clients are N
// connections spread over the nodes, as N independent users would be.
func newBenchHTTPClient(conf *tls.Config, timeout time.Duration) *http.Client {
	t := &http.Transport{
		// Never through a proxy from the environment: the load goes
		// straight to the nodes named by --addr.
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     conf.Clone(),
		TLSHandshakeTimeout: 10 * time.Second,
		// A non-nil empty map turns HTTP/2 off.
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConnsPerHost: 1,
		MaxConnsPerHost:     1,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &http.Client{
		Transport: t,
		Timeout:   timeout,
		// Neither target redirects; a redirect would be a misconfiguration
		// worth seeing as an error rather than following.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// benchClient sends requests to one node.
type benchClient struct {
	http *http.Client
	base string // https://host:port
	auth string // the Authorization header, or ""
	buf  bytes.Buffer
}

// statusError is a response other than 200.
type statusError struct {
	code    int
	message string
}

func (e *statusError) Error() string {
	if e.message == "" {
		return fmt.Sprintf("HTTP %d", e.code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.code, e.message)
}

// do sends r and reads the whole response, so the connection is reused.
// Only 200 is success: both targets answer 200 to every operation here.
func (c *benchClient) do(ctx context.Context, r benchRequest) error {
	var body *bytes.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, c.base+r.path, nilIfEmpty(body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return transportError(err)
	}
	c.buf.Reset()
	_, err = c.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return &statusError{code: resp.StatusCode, message: errorMessage(c.buf.Bytes())}
	}
	return nil
}

// nilIfEmpty keeps a nil *bytes.Reader from becoming a non-nil io.Reader.
func nilIfEmpty(r *bytes.Reader) io.Reader {
	if r == nil {
		return nil
	}
	return r
}

// transportError drops the method and URL that *url.Error adds, so that
// failures group by cause instead of by key.
func transportError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// errorMessage extracts the message of an error body: Arbor's and the
// etcd gateway's both have an "error" member. Other bodies are cut short.
func errorMessage(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	s := strings.Join(strings.Fields(string(body)), " ")
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return s
}

// errorKey groups an error for the summary.
func errorKey(err error) string {
	var se *statusError
	if errors.As(err, &se) {
		return se.Error()
	}
	if errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err) {
		return "timeout"
	}
	return err.Error()
}

// benchHint suggests the fix for the usual reasons a first request fails.
func benchHint(err error, target string) string {
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var se *statusError
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &hostErr):
		return "pass --ca with the CA that signed the nodes' certificates, or --insecure"
	case errors.As(err, &se) && se.code == http.StatusUnauthorized:
		return "pass --auth with an admin secret (or an ID token allowed by the rules)"
	case errors.Is(err, syscall.ECONNREFUSED):
		if target == "arbor" {
			return "is a node listening there? start one with arbor serve, or a cluster with scripts/bench/arbor-cluster.sh"
		}
		return "is etcd listening there? scripts/bench/etcd-cluster.sh starts a three-member cluster"
	}
	return ""
}
