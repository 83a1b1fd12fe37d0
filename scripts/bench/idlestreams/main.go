// Command idlestreams holds many idle Server-Sent-Events streams open on
// Arbor nodes, as that many browsers' EventSource would, so that
// scripts/bench/scale.sh can measure what they cost the cluster.
//
// Each stream is a GET of <prefix>/s<i>.json with Accept: text/event-stream
// on its own HTTP/1.1 TLS connection (EventSource over HTTP/1 opens one
// per stream), spread round-robin over --addr. Nothing writes under the
// prefix, so after the first `put` a stream only carries keep-alives. Once
// every stream has its first event the command prints "ready N" on
// stdout, then holds them until SIGTERM or SIGINT, or --max-time, and
// reports on stderr how many the server ended early.
//
//	idlestreams --addr 127.0.0.1:8443,127.0.0.1:8444 --ca ca.pem --auth-file secret --n 10000
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
	p := newPool(conf, auth, cfg.addrs, cfg.prefix)
	defer p.close()
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
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: idlestreams --addr host:port,... --ca ca.pem --auth-file secret --n N\n\n"+
			"Opens N idle SSE streams (one HTTP/1.1 TLS connection each), prints \"ready N\" once each has its\n"+
			"first event, and holds them until SIGTERM/SIGINT or --max-time.\n\nFlags:\n")
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
