package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// pool is a set of idle streams sharing one transport.
type pool struct {
	client *http.Client
	auth   string
	addrs  []string
	prefix string
	// ctx is every stream's lifetime: cancelling it closes them all.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// ended counts streams the server closed while the pool held them.
	ended atomic.Int64
	// watch is --watch: the locations watched, 0 for idle streams, whose
	// states are in states (one per stream).
	watch  int
	states []*watchState
}

// newPool returns a pool whose streams each get a connection of their
// own, as EventSource over HTTP/1.1 does, or with h2 share connections
// over HTTP/2, as many EventSources of one page do (a new connection once
// one carries as many streams as the server allows).
func newPool(conf *tls.Config, auth string, addrs []string, prefix string, h2 bool) *pool {
	tr := &http.Transport{
		TLSClientConfig: conf,
		// A non-nil empty map turns HTTP/2 off.
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{},
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   30 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		DisableCompression:    true,
	}
	if h2 {
		tr.TLSNextProto, tr.ForceAttemptHTTP2 = nil, true
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &pool{client: &http.Client{Transport: tr}, auth: auth, addrs: addrs, prefix: prefix, ctx: ctx, cancel: cancel}
}

// watching makes the pool's streams watch locations (watch.go).
func (p *pool) watching(watch, n int) {
	p.watch, p.states = watch, make([]*watchState, n)
	for i := range p.states {
		p.states[i] = &watchState{}
	}
}

// open opens n streams, at most parallel at a time, and returns once each
// has its first event, or with the first failure (ctx bounds the whole).
// progress is called at every thousandth stream.
func (p *pool) open(ctx context.Context, n, parallel int, progress func(done int)) error {
	slots := make(chan struct{}, parallel)
	failed := make(chan error, 1)
	var opened atomic.Int64
	fail := func(err error) {
		select {
		case failed <- err:
		default:
		}
	}
	// take waits for a free slot, or returns the first failure or the
	// end of the time to open them.
	take := func() error {
		select {
		case slots <- struct{}{}:
			return nil
		case err := <-failed:
			return err
		case <-ctx.Done():
			return fmt.Errorf("%d of %d streams open when the time to open them ran out", opened.Load(), n)
		}
	}
	for i := range n {
		if err := take(); err != nil {
			return err
		}
		p.wg.Go(func() {
			body, r, err := p.openOne(ctx, i)
			// The outcome is recorded before the slot is given back, so
			// that a failure is seen by the time every slot is back.
			if err != nil {
				fail(err)
				<-slots
				return
			}
			if k := opened.Add(1); k%1000 == 0 && progress != nil {
				progress(int(k))
			}
			<-slots
			p.hold(body, r, i)
		})
	}
	// Every slot back means every stream has finished opening.
	for range parallel {
		if err := take(); err != nil {
			return err
		}
	}
	select {
	case err := <-failed:
		return err
	default:
		return nil
	}
}

// openOne opens stream i and reads up to the end of its first event. The
// request lives as long as the pool; ctx only bounds the opening.
func (p *pool) openOne(ctx context.Context, i int) (io.ReadCloser, *bufio.Reader, error) {
	addr := p.addrs[i%len(p.addrs)]
	url := fmt.Sprintf("https://%s%s/s%d.json", addr, p.prefix, i)
	if p.watch > 0 {
		url = fmt.Sprintf("https://%s%s/w%d.json", addr, p.prefix, i%p.watch)
	}
	reqCtx, reqCancel := context.WithCancel(p.ctx)
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, url, nil)
	if err != nil {
		reqCancel()
		return nil, nil, fmt.Errorf("stream %d: %w", i, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if p.auth != "" {
		req.Header.Set("Authorization", "Bearer "+p.auth)
	}
	// Past ctx's deadline the request is cancelled; once the first event
	// is in, the stream no longer depends on ctx.
	detach := context.AfterFunc(ctx, reqCancel)
	resp, err := p.client.Do(req)
	if err != nil {
		reqCancel()
		return nil, nil, fmt.Errorf("stream %d on %s: %w", i, addr, err)
	}
	body := &cancelBody{ReadCloser: resp.Body, cancel: reqCancel}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		body.Close()
		return nil, nil, fmt.Errorf("stream %d on %s: %s %s: %s", i, addr, resp.Status, resp.Header.Get("Content-Type"), strings.TrimSpace(string(msg)))
	}
	r := bufio.NewReaderSize(body, 256)
	if err := firstEvent(r); err != nil {
		body.Close()
		return nil, nil, fmt.Errorf("stream %d on %s: %w", i, addr, err)
	}
	if !detach() {
		body.Close()
		return nil, nil, fmt.Errorf("stream %d on %s: the time to open the streams ran out", i, addr)
	}
	return body, r, nil
}

// firstEvent reads frames up to the end of the first `put`, the location's
// current value, which every stream starts with (SPEC §5).
func firstEvent(r *bufio.Reader) error {
	event := ""
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return fmt.Errorf("before the first event: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:") && (event == "cancel" || event == "auth_revoked"):
			return fmt.Errorf("the server sent %s: %s", event, strings.TrimSpace(strings.TrimPrefix(line, "data:")))
		case line == "" && event == "put":
			return nil
		case line == "":
			event = ""
		}
	}
}

// hold reads stream i (keep-alives, and with --watch the rounds, through
// r) until it ends; an end that the pool did not ask for counts in ended.
func (p *pool) hold(body io.ReadCloser, r *bufio.Reader, i int) {
	defer body.Close()
	var err error
	if p.watch > 0 {
		err = readPuts(r, p.states[i])
	} else {
		// Small on purpose: ten thousand streams each hold one.
		buf := make([]byte, 128)
		for err == nil {
			_, err = body.Read(buf)
		}
	}
	if err != nil && p.ctx.Err() == nil {
		p.ended.Add(1)
	}
}

// close ends every stream and waits (up to 10 s) for their goroutines.
func (p *pool) close() {
	p.cancel()
	done := make(chan struct{})
	go func() {
		p.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	p.client.CloseIdleConnections()
}

// cancelBody is a response body that also releases its request's context.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close implements io.Closer.
func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
