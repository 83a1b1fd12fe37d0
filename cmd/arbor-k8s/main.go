// Command arbor-k8s runs the Kubernetes scenarios of `make test-k8s`
// (docs/KUBERNETES.md) against a single-node cluster that
// scripts/k8s/cluster.sh started: it installs deploy/k8s with only the
// image tag changed (and the anti-affinity removed, as deploy/README.md
// says for one machine), then
//
//  1. upgrade: rolls the StatefulSet from the previous release to HEAD
//     under writes through the client Service and to the pods;
//  2. leader-kill: force-deletes the leader's pod under writes;
//  3. pdb: with one pod down, the eviction API refuses a second;
//  4. volume-lost: deletes a pod together with its claim;
//  5. scale: 3 → 5 → 3 with kubectl scale (and arbor members remove).
//
// Each scenario fails the run when its bar is missed; the figures go to
// stdout and to -report. It talks to the pods and the Service by their
// addresses on this machine (from the network namespace the cluster
// script made for it) and to the API server with kubectl.
package main

import (
	"context"
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

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "arbor-k8s:", err)
		os.Exit(1)
	}
}

type options struct {
	kubectl, kubeconfig string
	oldManifests        string // deploy/k8s of the previous release
	newManifests        string // deploy/k8s of HEAD
	oldTag, newTag      string
	certs               string // arbor certs init's directory (5 pods)
	work                string
	report              string
	scenarios           string
	timeout             time.Duration
	maxReady            time.Duration
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("arbor-k8s", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.kubectl, "kubectl", "kubectl", "the kubectl binary")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "the test cluster's kubeconfig")
	fs.StringVar(&o.oldManifests, "old-manifests", "deploy/k8s", "deploy/k8s of the previous release")
	fs.StringVar(&o.newManifests, "new-manifests", "deploy/k8s", "deploy/k8s of this tree")
	fs.StringVar(&o.oldTag, "old-tag", "", "image tag of the previous release (arbor:<tag>)")
	fs.StringVar(&o.newTag, "new-tag", "", "image tag of this tree")
	fs.StringVar(&o.certs, "certs", "", "directory of arbor certs init for arbor-0..4")
	fs.StringVar(&o.work, "work", "", "a directory for the overlay and the diagnostics")
	fs.StringVar(&o.report, "report", "", "write the figures here (markdown)")
	fs.StringVar(&o.scenarios, "scenarios", "upgrade,leader-kill,pdb,volume-lost,scale", "the scenarios to run, in order")
	fs.DurationVar(&o.timeout, "timeout", 40*time.Minute, "the whole run")
	fs.DurationVar(&o.maxReady, "max-ready", 3*time.Second, "upgrade: the longest a new pod may take from its container's start to Ready")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.kubeconfig == "" || o.oldTag == "" || o.newTag == "" || o.certs == "" || o.work == "" {
		return o, fmt.Errorf("-kubeconfig, -old-tag, -new-tag, -certs and -work are required")
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	o, err := parseFlags(args, os.Stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	t, err := setup(ctx, o, stdout)
	if err != nil {
		return err
	}
	defer t.close()
	var results []*result
	for _, name := range strings.Split(o.scenarios, ",") {
		s, ok := scenarios[name]
		if !ok {
			return fmt.Errorf("no scenario %q", name)
		}
		r := &result{Name: name, Title: s.title}
		fmt.Fprintf(stdout, "\n== %s: %s\n", name, s.title)
		start := time.Now()
		s.run(ctx, t, r)
		r.Took = time.Since(start)
		r.print(stdout)
		results = append(results, r)
		if ctx.Err() != nil {
			break
		}
	}
	failed := 0
	for _, r := range results {
		if len(r.Fails) > 0 {
			failed++
		}
	}
	if o.report != "" {
		if err := writeReport(o.report, o, results); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "\narbor-k8s: %d passed, %d failed\n", len(results)-failed, failed)
	if failed > 0 {
		return fmt.Errorf("%d of %d scenarios failed (diagnostics in %s)", failed, len(results), o.work)
	}
	return nil
}
