package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/arbordb/arbor/cmd/internal/cliflags"
)

// clientFlags are the flags of every command that talks to a node
// (SPEC §10): where, whom to trust, and the admin credential.
type clientFlags struct {
	addr     string
	ca       string
	auth     string
	authFile string
	timeout  time.Duration
}

// bind registers the flags. The secret should stay off command lines (the
// process list, shell history, `kubectl exec` audit logs): --auth-file
// reads it from a file, and without --auth the environment's ARBOR_AUTH
// or, inside an arbor pod, the node's own ARBOR_ADMIN_SECRET is used, so
// `kubectl exec arbor-0 -- /arbor status` needs no secret at all.
func (f *clientFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "localhost:8443", "the node's HTTPS `address` (host:port or https://host:port)")
	fs.StringVar(&f.ca, "ca", "", "PEM `file` of the CA (or self-signed certificate) to trust; default: the system roots")
	fs.StringVar(&f.auth, "auth", "", "admin `secret` (default $ARBOR_AUTH, else the node's own $ARBOR_ADMIN_SECRET); prefer --auth-file")
	fs.StringVar(&f.authFile, "auth-file", "", "`file` holding the admin secret (surrounding whitespace ignored)")
	fs.DurationVar(&f.timeout, "timeout", 10*time.Second, "how long to wait for the node")
}

// secret is the admin credential the flags and environment give: --auth,
// then --auth-file, then ARBOR_AUTH, then ARBOR_ADMIN_SECRET.
func (f *clientFlags) secret(getenv func(string) string) (string, error) {
	switch {
	case f.auth != "" && f.authFile != "":
		return "", errors.New("give --auth or --auth-file, not both")
	case f.auth != "":
		return f.auth, nil
	case f.authFile != "":
		b, err := os.ReadFile(f.authFile)
		if err != nil {
			return "", fmt.Errorf("--auth-file: %w", err)
		}
		secret := strings.TrimSpace(string(b))
		if secret == "" {
			return "", fmt.Errorf("--auth-file %s: the file is empty", f.authFile)
		}
		return secret, nil
	case getenv("ARBOR_AUTH") != "":
		return getenv("ARBOR_AUTH"), nil
	}
	return getenv("ARBOR_ADMIN_SECRET"), nil
}

// adminClient talks to one node's admin endpoints.
type adminClient struct {
	base string
	auth string
	http *http.Client
}

// client builds the HTTPS client the flags describe.
func (f *clientFlags) client() (*adminClient, error) {
	secret, err := f.secret(os.Getenv)
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, fmt.Errorf("--ca: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--ca %s: no PEM certificate in the file", f.ca)
		}
	}
	base := f.addr
	if !strings.Contains(base, "://") {
		base = "https://" + base
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("--addr %q: want host:port or https://host:port", f.addr)
	}
	return &adminClient{
		base: strings.TrimSuffix(u.String(), "/"),
		auth: secret,
		http: &http.Client{Timeout: f.timeout, Transport: &http.Transport{TLSClientConfig: tc}},
	}, nil
}

// do sends a request and decodes a 200 JSON answer into out (unless nil);
// any other answer becomes an error carrying the node's message.
func (c *adminClient) do(method, path string, out any) error {
	req, err := http.NewRequest(method, c.base+path, nil)
	if err != nil {
		return err
	}
	if c.auth != "" {
		req.Header.Set("Authorization", "Bearer "+c.auth)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s: %s", resp.Status, e.Error)
		}
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode the answer: %w", err)
	}
	return nil
}

// parseToolFlags parses a tool's flags, which may come before, between or
// after its arguments (arbor members remove n3 --addr …), and returns the
// arguments. ok is false when the caller should exit with code (0 for -h).
// A mistake is one line naming the flag; -h prints the usage.
func parseToolFlags(fs *flag.FlagSet, args []string, stderr io.Writer) (pos []string, code int, ok bool) {
	fs.SetOutput(stderr)
	pos, err := cliflags.ParseInterleaved(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return nil, exitOK, false
	case err != nil:
		cliflags.Report(stderr, fs.Name(), err)
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// usageMistake prints one line about a mistake on command's command line,
// with the pointer to its -h, and returns the usage exit code.
func usageMistake(stderr io.Writer, command, format string, args ...any) int {
	cliflags.Report(stderr, command, fmt.Errorf(format, args...))
	return exitUsage
}
