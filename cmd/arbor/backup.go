package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// runBackup is `arbor backup --out file.json`: a consistent export of the
// whole database (SPEC §10). The node renders its state as of one applied
// index behind a linearizable read barrier, with priorities
// (format=export), so `arbor restore` brings back exactly that state.
func runBackup(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("arbor backup", flag.ContinueOnError)
	var cf clientFlags
	cf.bind(fs)
	out := fs.String("out", "", "the `file` to write (required; written to a temporary file first, then renamed)")
	maxTime := fs.Duration("max-time", time.Hour, "give up when the transfer takes longer than this")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: arbor backup --out file.json [--addr host:port] [--ca ca.pem] [--auth secret]\n\nWrites a consistent export of the whole database (with priorities) to a file.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, code, ok := parseToolFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 || *out == "" {
		fmt.Fprintln(stderr, "arbor backup: --out file.json is required and nothing else may follow the flags")
		return exitUsage
	}
	c, err := cf.client()
	if err != nil {
		fmt.Fprintf(stderr, "arbor backup: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), *maxTime)
	defer cancel()
	start := time.Now()
	n, sum, err := backupTo(ctx, c, *out, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "arbor backup: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "backup: %s (%s, sha256 %s) written in %s\n", *out, humanBytes(n), sum, time.Since(start).Round(time.Millisecond))
	return exitOK
}

// backupTo streams the export into a temporary file beside path, checks
// that it is one complete JSON value, syncs it and renames it into place:
// path is either the old file or a whole new backup, never a torn one.
func backupTo(ctx context.Context, c *adminClient, path string, progress io.Writer) (int64, string, error) {
	resp, err := c.stream(ctx, http.MethodGet, "/.json?format=export&consistency=linearizable", nil, 0)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return 0, "", fmt.Errorf("create the output: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	meter := newByteMeter("backup: received", resp.ContentLength, progress)
	n, err := io.Copy(io.MultiWriter(tmp, h, meter), resp.Body)
	meter.done()
	if err != nil {
		return n, "", fmt.Errorf("transfer after %s: %w", humanBytes(n), err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, "", fmt.Errorf("transfer cut short: %d of %d bytes", n, resp.ContentLength)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return n, "", fmt.Errorf("check the output: %w", err)
	}
	if err := checkOneJSONValue(tmp); err != nil {
		return n, "", fmt.Errorf("the node's answer is not one complete JSON value: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return n, "", fmt.Errorf("sync the output: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return n, "", fmt.Errorf("close the output: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return n, "", fmt.Errorf("rename into place: %w", err)
	}
	keep = true
	if d, err := os.Open(filepath.Dir(path)); err == nil { // make the rename durable
		_ = d.Sync()
		d.Close()
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// checkOneJSONValue reads r as a token stream (constant memory) and fails
// unless it holds exactly one JSON value.
func checkOneJSONValue(r io.Reader) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("at byte %d: %w", dec.InputOffset(), err)
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
		if depth == 0 {
			break
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("more data after the value at byte %d", dec.InputOffset())
	}
	return nil
}

// expectContinueAbove is the body size from which a request asks the node
// whether it wants the body before sending it.
const expectContinueAbove = 1 << 20

// stream sends a request whose answer the caller reads as it arrives;
// --timeout bounds the wait for the answer's headers, ctx the whole
// transfer. An answer other than 2xx becomes an error with the node's
// message.
func (c *adminClient) stream(ctx context.Context, method, path string, body io.Reader, size int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.ContentLength = size
		req.Header.Set("Content-Type", "application/json")
	}
	if c.auth != "" {
		req.Header.Set("Authorization", "Bearer "+c.auth)
	}
	if size > expectContinueAbove {
		// The node refuses a body over its limit from the declared length
		// alone: asked first, it does so before the body is sent.
		req.Header.Set("Expect", "100-continue")
	}
	hc := &http.Client{Transport: c.http.Transport} // no whole-request timeout: ctx bounds it
	if t, ok := c.http.Transport.(*http.Transport); ok {
		t = t.Clone()
		t.ResponseHeaderTimeout = c.http.Timeout
		t.ExpectContinueTimeout = 2 * time.Second
		hc.Transport = t
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 { // print=silent answers 204
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(msg, &e) == nil && e.Error != "" {
			return nil, &statusError{code: resp.StatusCode, status: resp.Status, msg: e.Error}
		}
		return nil, &statusError{code: resp.StatusCode, status: resp.Status, msg: string(msg)}
	}
	return resp, nil
}

// statusError is a node's answer other than 2xx, with its message.
type statusError struct {
	code   int
	status string
	msg    string
}

func (e *statusError) Error() string { return e.status + ": " + e.msg }

// hasStatus reports whether err is a node's answer with status code.
func hasStatus(err error, code int) bool {
	var se *statusError
	return errors.As(err, &se) && se.code == code
}

// byteMeter is an io.Writer that counts bytes and prints the progress at
// most once a second (and once at the end).
type byteMeter struct {
	label string
	total int64 // -1: unknown
	n     int64
	last  time.Time
	start time.Time
	w     io.Writer
}

func newByteMeter(label string, total int64, w io.Writer) *byteMeter {
	now := time.Now()
	return &byteMeter{label: label, total: total, w: w, last: now, start: now}
}

// Write counts p.
func (m *byteMeter) Write(p []byte) (int, error) {
	m.n += int64(len(p))
	if time.Since(m.last) >= time.Second {
		m.print()
	}
	return len(p), nil
}

func (m *byteMeter) print() {
	m.last = time.Now()
	rate := float64(m.n) / max(time.Since(m.start).Seconds(), 1e-3)
	if m.total > 0 {
		fmt.Fprintf(m.w, "%s %s of %s (%.0f%%, %s/s)\n", m.label, humanBytes(m.n), humanBytes(m.total), 100*float64(m.n)/float64(m.total), humanBytes(int64(rate)))
		return
	}
	fmt.Fprintf(m.w, "%s %s (%s/s)\n", m.label, humanBytes(m.n), humanBytes(int64(rate)))
}

// done prints the final count if any progress was shown.
func (m *byteMeter) done() {
	if m.last != m.start {
		m.print()
	}
}

// humanBytes formats n as B, KiB, MiB or GiB.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
