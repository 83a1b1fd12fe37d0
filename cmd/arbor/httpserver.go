package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
	"golang.org/x/net/http2"
)

// Timeouts of the client-facing server. There is no write timeout: event
// streams stay open for hours. Slow-loris clients are bounded by the
// header timeout; idle keep-alive connections are reclaimed.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
)

// newWriteScheduler orders an HTTP/2 connection's frames. x/net's default
// round-robin scheduler walks every open stream of the connection to find
// one with a frame to send, each time it sends one; a connection carrying
// 250 event streams, most of them idle, then spends its time walking
// empty queues (a write fanning out to 100,000 streams spent over a third
// of the leader's CPU there). The random scheduler keeps only the streams
// that have frames waiting. Event streams need no priorities, and HTTP/2's
// are deprecated (RFC 9113).
func newWriteScheduler() http2.WriteScheduler { return http2.NewRandomWriteScheduler() }

// httpsServer is the client-facing HTTPS listener. There is deliberately no
// plain-HTTP listener: plain HTTP sent to this port gets Go's 400 reply.
// Every other answer is SPEC §6 JSON, also those net/http writes by itself
// on an HTTP/1 connection (goanswers.go). Over HTTP/2 a header list over
// the limit (431) and a connection-specific header (400) are answered by
// the HTTP/2 server itself, in text: no client in use sends either (Go's,
// curl and nghttp2 refuse to), so re-coding HPACK to make them JSON would
// serve only hand-made frames.
type httpsServer struct {
	srv      *http.Server
	addr     string // the address it really listens on
	addrFile string
	logger   *slog.Logger
	errc     chan error
}

// listenHTTPS starts serving h over TLS (1.2 or newer) on addr, logs the
// address it really listens on (addr may have port 0) and writes it to
// addrFile for tools and tests.
func listenHTTPS(addr, addrFile string, maxConns int, h http.Handler, getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), logger *slog.Logger) (*httpsServer, error) {
	raw, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for HTTPS: %w", err)
	}
	// "h2" in NextProtos makes Serve set HTTP/2 up; the listener gets its
	// own copy, which Serve's set-up does not touch.
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: getCert, NextProtos: []string{"h2", "http/1.1"}}
	errorLog := slog.NewLogLogger(logger.Handler(), slog.LevelWarn)
	ln := newTLSListener(newLimitListener(raw, maxConns), tlsConfig.Clone(), readHeaderTimeout, errorLog.Printf)
	s := &httpsServer{
		srv: &http.Server{
			Handler:           h,
			TLSConfig:         tlsConfig,
			ReadHeaderTimeout: readHeaderTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          errorLog,
		},
		addrFile: addrFile,
		logger:   logger,
		errc:     make(chan error, 1),
	}
	if err := http2.ConfigureServer(s.srv, &http2.Server{NewWriteScheduler: newWriteScheduler}); err != nil {
		ln.Close()
		return nil, fmt.Errorf("set up HTTP/2: %w", err)
	}
	go func() { s.errc <- s.srv.Serve(ln) }()
	s.addr = ln.Addr().String()
	logger.Info("listening", "addr", s.addr, "max_connections", maxConns)
	if err := atomicfile.Write(addrFile, []byte(s.addr+"\n"), 0o644); err != nil {
		s.srv.Close()
		return nil, fmt.Errorf("write %s: %w", addrFile, err)
	}
	return s, nil
}

// failed delivers the error that stopped the server on its own.
func (s *httpsServer) failed() <-chan error { return s.errc }

// shutdown stops accepting connections and waits for in-flight requests
// until ctx ends; whatever is still open then is closed. A drain cut short
// is logged, not returned: the process is stopping either way.
func (s *httpsServer) shutdown(ctx context.Context) {
	if err := s.srv.Shutdown(ctx); err != nil {
		s.logger.Warn("requests still running at the drain deadline were cut off", "err", err)
		s.srv.Close()
	}
	if err := os.Remove(s.addrFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.logger.Warn("could not remove the address file", "err", err)
	}
}
