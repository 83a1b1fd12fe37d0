// Command idlestreams holds many idle Server-Sent-Events streams open on
// Arbor nodes, as that many browsers' EventSource would, so that
// scripts/bench/scale.sh can measure what they cost the cluster.
//
// Each stream is a GET of <prefix>/s<i>.json with Accept: text/event-stream
// on its own HTTP/1.1 TLS connection (EventSource over HTTP/1 opens one
// per stream), or with --h2 over shared HTTP/2 connections, spread
// round-robin over --addr. Nothing writes under the prefix, so after the
// first `put` a stream only carries keep-alives. Once every stream has its
// first event the command prints "ready N" on stdout, then holds them
// until SIGTERM or SIGINT, or --max-time, and reports on stderr how many
// the server ended early. With --watch the streams watch locations that
// the command then writes, and it checks that every stream saw every
// write once and in order (watch.go).
//
//	idlestreams --addr 127.0.0.1:8443,127.0.0.1:8444 --ca ca.pem --auth-file secret --n 10000
//	idlestreams --h2 --addr … --n 100000 --watch 1000 --rounds 5 --interval 10s
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// config is what the flags say.
type config struct {
	addrs       []string
	caFile      string
	authFile    string
	n           int
	prefix      string
	parallel    int
	openTimeout time.Duration
	maxTime     time.Duration
	h2          bool
	// watch, rounds, interval and settle are --watch's (watch.go).
	watch    int
	rounds   int
	interval time.Duration
	settle   time.Duration
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "idlestreams: %v\n", err)
		return 2
	}
	conf, auth, err := cfg.credentials()
	if err != nil {
		fmt.Fprintf(stderr, "idlestreams: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.maxTime)
	defer cancel()

	start := time.Now()
	p := newPool(conf, auth, cfg.addrs, cfg.prefix, cfg.h2)
	defer p.close()
	if cfg.watch > 0 {
		p.watching(cfg.watch, cfg.n)
	}
	openCtx, openCancel := context.WithTimeout(ctx, cfg.openTimeout)
	err = p.open(openCtx, cfg.n, cfg.parallel, func(done int) {
		fmt.Fprintf(stderr, "idlestreams: %d of %d streams open\n", done, cfg.n)
	})
	openCancel()
	if err != nil {
		fmt.Fprintf(stderr, "idlestreams: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "idlestreams: %d streams open on %d node(s) in %.1f s\n", cfg.n, len(cfg.addrs), time.Since(start).Seconds())
	fmt.Fprintf(stdout, "ready %d\n", cfg.n)
	if cfg.watch > 0 {
		return p.checkRounds(ctx, cfg, stdout, stderr)
	}
	<-ctx.Done()
	if ended := p.ended.Load(); ended > 0 {
		fmt.Fprintf(stderr, "idlestreams: the server ended %d of %d streams before the end\n", ended, cfg.n)
	} else {
		fmt.Fprintf(stderr, "idlestreams: all %d streams stayed open; closing them\n", cfg.n)
	}
	return 0
}

// parseFlags reads the command line.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("idlestreams", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	addrs := fs.String("addr", "127.0.0.1:8443", "comma list of nodes (host:port); streams are spread round-robin")
	fs.StringVar(&cfg.caFile, "ca", "", "PEM `file` of the CA that signed the nodes' certificates (required)")
	fs.StringVar(&cfg.authFile, "auth-file", "", "`file` holding the admin secret, sent as a Bearer token (a file, so that it stays off the command line)")
	fs.IntVar(&cfg.n, "n", 1000, "streams to open (at most 100000)")
	fs.StringVar(&cfg.prefix, "prefix", "/scale-idle", "location under which each stream listens to a child s<i> that nobody writes")
	fs.IntVar(&cfg.parallel, "parallel", 32, "streams being opened at once (TLS handshakes in flight)")
	fs.DurationVar(&cfg.openTimeout, "open-timeout", 5*time.Minute, "give up when the streams are not all open within this")
	fs.DurationVar(&cfg.maxTime, "max-time", 2*time.Hour, "close the streams and exit after this even without a signal")
	fs.BoolVar(&cfg.h2, "h2", false, "share connections over HTTP/2 (as many EventSources of one page do) instead of one HTTP/1.1 connection per stream")
	fs.IntVar(&cfg.watch, "watch", 0, "streams watch these many locations w<k> under --prefix; once all are open, write --rounds rounds to them, check every stream saw each round once and in order, and exit (1 on a loss)")
	fs.IntVar(&cfg.rounds, "rounds", 20, "with --watch: rounds to write (at most 100000)")
	fs.DurationVar(&cfg.interval, "interval", 100*time.Millisecond, "with --watch: pause after each round")
	fs.DurationVar(&cfg.settle, "settle", 0, "with --watch: wait this long after the streams are open before the first round (to read the nodes' memory meanwhile)")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: idlestreams --addr host:port,... --ca ca.pem --auth-file secret --n N\n\n"+
			"Opens N idle SSE streams (one HTTP/1.1 TLS connection each, or over HTTP/2 with --h2), prints\n"+
			"\"ready N\" once each has its first event, and holds them until SIGTERM/SIGINT or --max-time.\n"+
			"With --watch K they watch K locations instead, and the command writes rounds to them and checks\n"+
			"that every stream saw each round once and in order.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	for a := range strings.SplitSeq(*addrs, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.addrs = append(cfg.addrs, a)
		}
	}
	switch {
	case fs.NArg() > 0:
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case len(cfg.addrs) == 0:
		return config{}, errors.New("--addr names no node")
	case cfg.caFile == "":
		return config{}, errors.New("--ca is required")
	case cfg.n < 1 || cfg.n > 100000:
		return config{}, fmt.Errorf("--n %d: want 1 to 100000", cfg.n)
	case cfg.parallel < 1 || cfg.parallel > 1024:
		return config{}, fmt.Errorf("--parallel %d: want 1 to 1024", cfg.parallel)
	case !strings.HasPrefix(cfg.prefix, "/"):
		return config{}, fmt.Errorf("--prefix %q must start with /", cfg.prefix)
	case cfg.openTimeout <= 0 || cfg.maxTime <= 0:
		return config{}, errors.New("--open-timeout and --max-time must be positive")
	case cfg.watch < 0 || cfg.watch > 10000:
		return config{}, fmt.Errorf("--watch %d: want 0 to 10000", cfg.watch)
	case cfg.rounds < 1 || cfg.rounds > 100000 || cfg.interval < 0 || cfg.settle < 0:
		return config{}, errors.New("--rounds must be 1 to 100000, --interval and --settle not negative")
	}
	cfg.prefix = strings.TrimSuffix(cfg.prefix, "/")
	return cfg, nil
}

// credentials loads the CA and the secret the flags name.
func (c config) credentials() (*tls.Config, string, error) {
	pem, err := os.ReadFile(c.caFile)
	if err != nil {
		return nil, "", fmt.Errorf("--ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, "", fmt.Errorf("--ca %s holds no PEM certificate", c.caFile)
	}
	var auth string
	if c.authFile != "" {
		b, err := os.ReadFile(c.authFile)
		if err != nil {
			return nil, "", fmt.Errorf("--auth-file: %w", err)
		}
		auth = strings.TrimSpace(string(b))
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, auth, nil
}

// checkRounds writes the rounds, waits (up to a minute past the last)
// for every stream to see them, and reports what the streams saw: 0 when
// each saw every round once and in order, else 1.
func (p *pool) checkRounds(ctx context.Context, cfg config, stdout, stderr io.Writer) int {
	select {
	case <-time.After(cfg.settle):
	case <-ctx.Done():
		return 1
	}
	start := time.Now()
	acked, err := p.writeRounds(ctx, cfg.watch, cfg.rounds, cfg.interval)
	wrote := time.Since(start)
	if err != nil {
		fmt.Fprintf(stderr, "idlestreams: %v\n", err)
	}
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	t := waitComplete(waitCtx, p.states, acked)
	cancel()
	fmt.Fprintf(stdout, "rounds %d of %d acknowledged in %.1f s, to %d locations; streams %d: %d saw every one, %d are behind (lowest round seen %d); %d rounds missing, %d stale; %d streams ended by the server\n",
		acked, cfg.rounds, wrote.Seconds(), cfg.watch, t.streams, t.complete, t.behind, t.behindLast, t.missing, t.stale, p.ended.Load())
	if err != nil {
		return 1
	}
	if t.complete != t.streams || t.missing != 0 || t.stale != 0 {
		return 1
	}
	return 0
}
