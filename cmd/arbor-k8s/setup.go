package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

const (
	namespace = "arbor"
	// serviceHost is the client Service's name, which the certificates
	// carry (arbor certs init --dns).
	serviceHost = "arbor.arbor.svc"
	// requestTimeout bounds one request: longer than a node's write
	// timeout (5 s), so that its 503 arrives first.
	requestTimeout = 10 * time.Second
	maxPods        = 5
)

// podHost is a pod's stable name under the headless Service, which its
// certificate carries.
func podHost(name string) string { return name + ".arbor-headless.arbor.svc.cluster.local" }

func podName(i int) string { return fmt.Sprintf("arbor-%d", i) }

// podHosts are the stable names of arbor-0..n-1.
func podHosts(n int) []string {
	var out []string
	for i := range n {
		out = append(out, podHost(podName(i)))
	}
	return out
}

// test is the running cluster as the scenarios see it.
type test struct {
	o      options
	k      kube
	w      *watcher
	ccfg   client.Config
	admin  *client.Client
	out    io.Writer
	cancel context.CancelFunc
	// watching runs the pod watch and its backstop.
	watching sync.WaitGroup
}

// close stops the pod watch and waits for its kubectl to end (so that
// none outlives the run).
func (t *test) close() {
	t.admin.Close()
	t.cancel()
	t.watching.Wait()
}

// setup creates the Secrets, applies the previous release and waits
// until its three pods are ready under one leader.
func setup(ctx context.Context, o options, out io.Writer) (*test, error) {
	k := kube{kubectl: o.kubectl, kubeconfig: o.kubeconfig, ns: namespace}
	ca, err := client.LoadCA(filepath.Join(o.certs, "ca.pem"))
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 24)
	if _, err := rand.Read(secret); err != nil {
		return nil, err
	}
	admin := base64.RawURLEncoding.EncodeToString(secret)

	if _, err := k.run(ctx, "create", "namespace", namespace); err != nil {
		return nil, err
	}
	args := []string{"create", "secret", "generic", "arbor-tls"}
	files, err := os.ReadDir(o.certs)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if !f.IsDir() && !(strings.HasPrefix(f.Name(), "ca") && strings.HasSuffix(f.Name(), "-key.pem")) {
			args = append(args, "--from-file="+filepath.Join(o.certs, f.Name()))
		}
	}
	if _, err := k.run(ctx, args...); err != nil {
		return nil, err
	}
	if _, err := k.run(ctx, "create", "secret", "generic", "arbor-admin", "--from-literal=admin-secret="+admin); err != nil {
		return nil, err
	}

	wctx, cancel := context.WithCancel(ctx)
	w := newWatcher(k)
	t := &test{o: o, k: k, w: w, out: out, cancel: cancel}
	t.watching.Go(func() { w.run(wctx) })
	t.watching.Go(func() { w.resync(wctx) })
	t.ccfg = client.Config{CA: ca, Secret: admin, Timeout: requestTimeout, Dial: w.dial}
	t.ccfg.Endpoints = append(t.ccfg.Endpoints, client.Endpoint{Node: serviceHost, Addr: serviceHost + ":443"})
	for i := range maxPods {
		h := podHost(podName(i))
		t.ccfg.Endpoints = append(t.ccfg.Endpoints, client.Endpoint{Node: h, Addr: h + ":8443"})
	}
	t.admin = client.New(t.ccfg)

	start := time.Now()
	if err := t.apply(ctx, o.oldManifests, o.oldTag); err != nil {
		t.close()
		return nil, err
	}
	ip, err := k.run(ctx, "get", "service", "arbor", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil {
		t.close()
		return nil, err
	}
	w.mu.Lock()
	w.svcIP = strings.TrimSpace(string(ip))
	w.mu.Unlock()
	if err := t.waitPods(ctx, 3, o.oldTag, nil, 5*time.Minute); err != nil {
		t.close()
		return nil, fmt.Errorf("the previous release did not come up: %w", err)
	}
	leader, err := t.leader(ctx, 3)
	if err != nil {
		t.close()
		return nil, err
	}
	fmt.Fprintf(out, "arbor-k8s: arbor:%s up, 3/3 ready in %s, leader %s, client Service %s\n",
		o.oldTag, time.Since(start).Round(time.Second), leader, w.svcIP)
	return t, nil
}

// apply installs manifests (a deploy/k8s directory) with the image tag
// and the one-machine patch, through an overlay in the work directory.
func (t *test) apply(ctx context.Context, manifests, tag string) error {
	dir := filepath.Join(t.o.work, "overlay-"+tag)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(manifests)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		return err
	}
	k := fmt.Sprintf(`# make test-k8s: deploy/k8s with only the image tag changed, and the
# required anti-affinity removed (one machine; deploy/README.md).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: arbor
    newTag: %q
patches:
  - target: {kind: StatefulSet, name: arbor}
    patch: |-
      - op: remove
        path: /spec/template/spec/affinity
`, rel, tag)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		return err
	}
	_, err = t.k.run(ctx, "apply", "-k", dir)
	return err
}

// waitPods waits until arbor-0..n-1 are ready on the image tag, none of
// them one of the pods in old (by UID).
func (t *test) waitPods(ctx context.Context, n int, tag string, old map[string]bool, timeout time.Duration) error {
	return testcluster.Poll(ctx, timeout, 200*time.Millisecond, func(context.Context) error {
		for i := range n {
			p, ok := t.w.get(podName(i))
			switch {
			case !ok:
				return fmt.Errorf("%s: no pod", podName(i))
			case old[p.UID]:
				return fmt.Errorf("%s: not replaced yet", p.Name)
			case !strings.HasSuffix(p.Image, ":"+tag):
				return fmt.Errorf("%s runs %s, not %s", p.Name, p.Image, tag)
			case !p.Ready:
				return fmt.Errorf("%s not ready", p.Name)
			}
		}
		return nil
	})
}

// leader waits until arbor-0..n-1 name one leader, and returns it.
func (t *test) leader(ctx context.Context, n int) (string, error) {
	var leader string
	err := testcluster.Poll(ctx, 60*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		l, err := testcluster.OneLeader(podHosts(n), func(node string) (testcluster.Status, error) {
			return testcluster.GetStatus(ctx, t.admin, node)
		})
		leader = l
		return err
	})
	return leader, err
}

// status reads one pod's /status.
func (t *test) status(ctx context.Context, name string) (testcluster.Status, error) {
	return testcluster.GetStatus(ctx, t.admin, podHost(name))
}

// uids are the UIDs of the current pods arbor-0..n-1.
func (t *test) uids(n int) map[string]bool {
	out := map[string]bool{}
	for i := range n {
		if p, ok := t.w.get(podName(i)); ok {
			out[p.UID] = true
		}
	}
	return out
}

// claimVolume is the PersistentVolume bound to a claim.
func (t *test) claimVolume(ctx context.Context, claim string) (string, error) {
	out, err := t.k.run(ctx, "get", "pvc", claim, "-o", "jsonpath={.spec.volumeName}")
	return strings.TrimSpace(string(out)), err
}

// firstLog is the runtime's timestamp of the first line a pod's
// container wrote: its process started then (milliseconds, unlike the
// API's startedAt).
func (t *test) firstLog(ctx context.Context, name string) (time.Time, error) {
	out, err := t.k.run(ctx, "logs", name, "--timestamps", "--limit-bytes=2000")
	if err != nil {
		return time.Time{}, err
	}
	ts, _, _ := strings.Cut(string(out), " ")
	return time.Parse(time.RFC3339Nano, ts)
}

// diagnose saves what explains a failure: the pods, events and logs.
func (t *test) diagnose(ctx context.Context, label string) {
	dir := filepath.Join(t.o.work, "diag-"+label)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	save := func(name string, args ...string) {
		out, err := t.k.run(context.WithoutCancel(ctx), args...)
		if err != nil {
			out = append(out, []byte("\n"+err.Error())...)
		}
		os.WriteFile(filepath.Join(dir, name), out, 0o644) //nolint:errcheck // best effort
	}
	save("pods.txt", "get", "pods,pvc,pdb", "-o", "wide")
	save("events.txt", "get", "events", "--sort-by=.lastTimestamp")
	for i := range maxPods {
		save(podName(i)+".log", "logs", podName(i), "--tail=300")
		save(podName(i)+"-previous.log", "logs", podName(i), "--previous", "--tail=300")
	}
	os.WriteFile(filepath.Join(dir, "watch-errors.txt"), []byte(strings.Join(t.w.errors(), "\n")+"\n"), 0o644) //nolint:errcheck // best effort
	fmt.Fprintf(t.out, "   diagnostics in %s\n", dir)
}
