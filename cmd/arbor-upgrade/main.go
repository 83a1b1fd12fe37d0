// Command arbor-upgrade tests a rolling upgrade (SPEC §9): it
// starts a three-node cluster of an older release with mutual TLS, runs a
// recorded read/write load, and replaces the nodes one at a time with the
// new release the way a StatefulSet does — highest ordinal first, but the
// leader last, each stopped with SIGTERM and restarted on its data, ready
// and caught up before the next. Then it checks that the register history
// is linearizable, that no acknowledged write was lost on any node, that
// every node runs the new release, and that no step left writes
// unacknowledged for -max-gap or longer; it prints each step's write
// unavailability and latency.
//
// It also crosses the log-entry and snapshot formats this tree writes
// that the reference, the last release, does not apply (formats.go; from
// v0.1.0 there are none yet): while a member runs the old release, a
// write over 1 MiB travels as one entry every node reads back, and — when
// the reference cannot apply the rules entry — the rules entry is refused
// with the documented 503, nothing is logged, and snapshots stay in the
// reference's format; each upgraded node restores the old release's
// snapshot; once every member advertises the new release, the rules are
// accepted, read back everywhere and judge writes through a follower, a
// large write is one entry (counted in the quiet leader's log), and a
// follower restarted after a snapshot with the rules restores it. Only
// the new release gets the snapshot flags that trigger those snapshots;
// both binaries' `serve -h` must list every flag they are given.
//
// The process variant always runs; the container variant too when both
// images are given and Docker answers. `make test-upgrade` builds the two
// releases and runs it.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "arbor-upgrade:", err)
		os.Exit(1)
	}
}

// errFailed says a variant failed; its report says why.
var errFailed = errors.New("the rolling upgrade test failed")

func run(ctx context.Context, args []string, out io.Writer) error {
	o, err := parseOptions(args, out)
	if err != nil {
		return err
	}
	if o.Verbose {
		progress = func(format string, args ...any) {
			fmt.Fprintf(out, "arbor-upgrade: "+format+"\n", args...)
		}
	}
	rel, err := binaryReleases(ctx, o)
	if err != nil {
		return err
	}
	if err := checkReleaseFlags(ctx, o); err != nil {
		return err
	}
	variants := []string{"process"}
	switch useDocker := o.OldImage != "" && o.NewImage != ""; o.Docker {
	case "yes":
		if !useDocker || !testcluster.DockerAvailable(ctx) {
			return errors.New("-docker=yes needs -old-image, -new-image and a Docker daemon that answers")
		}
		variants = append(variants, "docker")
	case "auto":
		if useDocker && testcluster.DockerAvailable(ctx) {
			variants = append(variants, "docker")
		} else {
			fmt.Fprintln(out, "arbor-upgrade: no images or no Docker daemon: the container variant is skipped")
		}
	}
	if o.Dir == "" {
		if o.Dir, err = os.MkdirTemp("", "arbor-upgrade-"); err != nil {
			return err
		}
	}
	secret, err := randomToken()
	if err != nil {
		return err
	}
	failed := false
	for _, v := range variants {
		dir := filepath.Join(o.Dir, v)
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		var b backend
		switch v {
		case "process":
			b = &processes{oldBin: o.OldBin, newBin: o.NewBin, dir: dir, secret: secret}
		case "docker":
			runID, err := randomToken()
			if err != nil {
				return err
			}
			b = &containers{oldImage: o.OldImage, newImage: o.NewImage, dir: dir, secret: secret, runID: runID[:8]}
		}
		fmt.Fprintf(out, "arbor-upgrade: %s variant in %s …\n", v, dir)
		r := runVariant(ctx, o, b, dir, rel, secret)
		if v == "docker" {
			for _, img := range []struct{ what, name string }{{"old", o.OldImage}, {"new", o.NewImage}} {
				if size, err := testcluster.ImageSize(ctx, img.name); err == nil {
					r.Notes = append(r.Notes, fmt.Sprintf("%s image %s: %.1f MB", img.what, img.name, float64(size)/1e6))
				}
			}
		}
		r.keepOrRemove(o.Keep)
		r.print(out, o)
		failed = failed || len(r.Failures) > 0
		if ctx.Err() != nil {
			break
		}
	}
	if failed {
		return errFailed
	}
	if !o.Keep {
		_ = os.Remove(o.Dir) // only if empty: a failed variant's files stay
	}
	return nil
}

func parseOptions(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("arbor-upgrade", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.OldBin, "old", "", "`binary` of the old release (required)")
	fs.StringVar(&o.NewBin, "new", "", "`binary` of the new release (required)")
	fs.StringVar(&o.OldImage, "old-image", "", "container `image` of the old release (container variant)")
	fs.StringVar(&o.NewImage, "new-image", "", "container `image` of the new release (container variant)")
	fs.StringVar(&o.Docker, "docker", "auto", "container variant: auto (when the images are given and Docker answers), yes or no")
	fs.StringVar(&o.Dir, "dir", "", "work `directory` (default: a new temporary one); a failed variant's files stay there")
	fs.BoolVar(&o.Keep, "keep", false, "keep the work directory after a success too")
	fs.BoolVar(&o.Verbose, "v", false, "say what each wait is waiting for, every few seconds")
	fs.IntVar(&o.Clients, "clients", 6, "concurrent clients")
	fs.IntVar(&o.Rate, "rate", 300, "operations per second, all clients together")
	fs.IntVar(&o.Registers, "registers", 8, "register keys per key generation of the workload (conflicts grow as it shrinks)")
	fs.DurationVar(&o.Settle, "settle", 3*time.Second, "load before the first and after the last step")
	fs.DurationVar(&o.Dwell, "dwell", 2*time.Second, "load on the healthy mixed-version cluster after each step")
	fs.DurationVar(&o.MaxGap, "max-gap", 2*time.Second, "longest time a step may go without an acknowledged write")
	fs.DurationVar(&o.StepTimeout, "step-timeout", 90*time.Second, "bound on each wait for a node or the cluster to be ready")
	fs.DurationVar(&o.Timeout, "timeout", 8*time.Minute, "bound on each variant")
	fs.DurationVar(&o.CheckTimeout, "check-timeout", 2*time.Minute, "bound on the linearizability check")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case o.OldBin == "" || o.NewBin == "":
		return o, errors.New("-old and -new are required (make test-upgrade builds them)")
	case o.Docker != "auto" && o.Docker != "yes" && o.Docker != "no":
		return o, fmt.Errorf("-docker is auto, yes or no, not %q", o.Docker)
	case o.Clients < 1 || o.Rate < 1 || o.Registers < 1:
		return o, errors.New("-clients, -rate and -registers must be positive")
	}
	return o, nil
}

// binaryReleases asks both binaries for their release; they must differ,
// or the test could not tell an upgraded node from an old one.
func binaryReleases(ctx context.Context, o options) (releases, error) {
	var rel releases
	for _, b := range []struct {
		bin string
		to  *string
	}{{o.OldBin, &rel.Old}, {o.NewBin, &rel.New}} {
		out, err := exec.CommandContext(ctx, b.bin, "version").Output()
		if err != nil {
			return rel, fmt.Errorf("%s version: %w", b.bin, err)
		}
		if *b.to, err = parseRelease(string(out)); err != nil {
			return rel, fmt.Errorf("%s: %w", b.bin, err)
		}
	}
	if rel.Old == rel.New {
		return rel, fmt.Errorf("both binaries report release %s; stamp them differently (-ldflags -X main.version=…)", rel.Old)
	}
	return rel, nil
}

// randomToken returns 24 random bytes, URL-safe base64.
func randomToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}
