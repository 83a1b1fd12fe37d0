package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"
)

// kube runs the kubectl built by scripts/k8s/build.sh against the test
// cluster, in the namespace of the manifests.
type kube struct {
	kubectl, kubeconfig, ns string
}

// kubectlBound bounds one kubectl call that is not a wait.
const kubectlBound = 60 * time.Second

// run runs kubectl with args in the namespace and returns its output.
func (k kube) run(ctx context.Context, args ...string) ([]byte, error) {
	return k.runIn(ctx, nil, args...)
}

// runIn is run with stdin.
func (k kube) runIn(ctx context.Context, stdin []byte, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, kubectlBound)
	defer cancel()
	full := append([]string{"--kubeconfig", k.kubeconfig, "-n", k.ns}, args...)
	cmd := exec.CommandContext(ctx, k.kubectl, full...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// pod is what the watch last said of one pod, with when the test saw it
// running and ready (the watch's clock, milliseconds; the API's own
// timestamps have whole seconds).
type pod struct {
	Name, UID, IP, Image string
	Ready, Deleting      bool
	Running              bool
	StartedAt            time.Time // the container's start, from the API (seconds)
	SeenRunning          time.Time
	SeenReady            time.Time
	SeenGone             time.Time // deleted (the watch's DELETED event)
	Restarts             int
	Volume               string // the claim of the volume data
	seen                 time.Time
}

// watcher follows the namespace's pods with `kubectl get pods -w`.
type watcher struct {
	k  kube
	mu sync.Mutex
	// byName holds the current pod of each name; byUID every pod seen.
	byName map[string]*pod
	byUID  map[string]*pod
	svcIP  string
	errs   []string
}

func newWatcher(k kube) *watcher {
	return &watcher{k: k, byName: map[string]*pod{}, byUID: map[string]*pod{}}
}

// resyncEvery is how often the watcher also lists the pods: a backstop
// for a watch that stalls without ending (seen once: the test waited a
// minute for a pod the kubelet had made ready).
const resyncEvery = 2 * time.Second

// resync lists the pods every resyncEvery until ctx ends and applies the
// list: each listed pod as modified, each missing one as deleted.
func (w *watcher) resync(ctx context.Context) {
	tick := time.NewTicker(resyncEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		start := time.Now()
		out, err := w.k.run(ctx, "get", "pods", "-o", "json")
		if err != nil {
			w.note(err)
			continue
		}
		var list struct {
			Items []podJSON `json:"items"`
		}
		if err := json.Unmarshal(out, &list); err != nil {
			w.note(err)
			continue
		}
		now := time.Now()
		listed := map[string]bool{}
		for _, o := range list.Items {
			listed[o.Metadata.UID] = true
			w.apply(watchEvent{Type: "MODIFIED", Object: o}, now)
		}
		w.mu.Lock()
		var gone []watchEvent
		for _, p := range w.byName {
			// Only a pod known before the list began: a newer one
			// may simply be younger than the list.
			if !listed[p.UID] && p.seen.Before(start) {
				var o podJSON
				o.Metadata.Name, o.Metadata.UID = p.Name, p.UID
				gone = append(gone, watchEvent{Type: "DELETED", Object: o})
			}
		}
		w.mu.Unlock()
		for _, ev := range gone {
			w.apply(ev, now)
		}
	}
}

// note records a watch or list error for the diagnostics.
func (w *watcher) note(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) < 100 {
		w.errs = append(w.errs, time.Now().Format(time.RFC3339Nano)+" "+err.Error())
	}
}

// errors returns what went wrong with the watch and the lists.
func (w *watcher) errors() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.errs...)
}

// run watches until ctx ends, restarting the watch when it ends.
func (w *watcher) run(ctx context.Context) {
	for ctx.Err() == nil {
		err := w.watchOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		w.note(err)
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

type watchEvent struct {
	Type   string  `json:"type"`
	Object podJSON `json:"object"`
}

type podJSON struct {
	Metadata struct {
		Name              string  `json:"name"`
		UID               string  `json:"uid"`
		DeletionTimestamp *string `json:"deletionTimestamp"`
	} `json:"metadata"`
	Spec struct {
		Containers []struct {
			Image string `json:"image"`
		} `json:"containers"`
		Volumes []struct {
			Name                  string `json:"name"`
			PersistentVolumeClaim *struct {
				ClaimName string `json:"claimName"`
			} `json:"persistentVolumeClaim"`
		} `json:"volumes"`
	} `json:"spec"`
	Status struct {
		PodIP             string            `json:"podIP"`
		Conditions        []podCondition    `json:"conditions"`
		ContainerStatuses []containerStatus `json:"containerStatuses"`
	} `json:"status"`
}

type podCondition struct {
	Type   string `json:"type"`
	Status string `json:"status"`
}

type containerStatus struct {
	RestartCount int `json:"restartCount"`
	State        struct {
		Running *runningState `json:"running"`
	} `json:"state"`
}

type runningState struct {
	StartedAt time.Time `json:"startedAt"`
}

func (w *watcher) watchOnce(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.k.kubectl, "--kubeconfig", w.k.kubeconfig, "-n", w.k.ns,
		"get", "pods", "-w", "--output-watch-events", "-o", "json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer cmd.Wait() //nolint:errcheck // the watch ends with ctx
	dec := json.NewDecoder(out)
	for {
		var ev watchEvent
		if err := dec.Decode(&ev); err != nil {
			if err == io.EOF {
				return fmt.Errorf("the pod watch ended")
			}
			return fmt.Errorf("the pod watch: %w", err)
		}
		w.apply(ev, time.Now())
	}
}

func (w *watcher) apply(ev watchEvent, now time.Time) {
	o := ev.Object
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.byUID[o.Metadata.UID]
	if p == nil {
		p = &pod{Name: o.Metadata.Name, UID: o.Metadata.UID, seen: now}
		w.byUID[p.UID] = p
	}
	if !p.SeenGone.IsZero() {
		return // a late copy of a pod that is gone (from resync's list)
	}
	if ev.Type == "DELETED" {
		p.SeenGone, p.Ready = now, false
		if w.byName[p.Name] == p {
			delete(w.byName, p.Name)
		}
		return
	}
	w.byName[p.Name] = p
	p.IP = o.Status.PodIP
	p.Deleting = o.Metadata.DeletionTimestamp != nil
	if len(o.Spec.Containers) > 0 {
		p.Image = o.Spec.Containers[0].Image
	}
	for _, v := range o.Spec.Volumes {
		if v.Name == "data" && v.PersistentVolumeClaim != nil {
			p.Volume = v.PersistentVolumeClaim.ClaimName
		}
	}
	ready := false
	for _, c := range o.Status.Conditions {
		if c.Type == "Ready" && c.Status == "True" {
			ready = true
		}
	}
	p.Ready = ready && !p.Deleting
	if ready && p.SeenReady.IsZero() {
		p.SeenReady = now
	}
	p.Running = false
	if len(o.Status.ContainerStatuses) > 0 {
		cs := o.Status.ContainerStatuses[0]
		p.Restarts = cs.RestartCount
		if cs.State.Running != nil {
			p.Running = true
			if p.SeenRunning.IsZero() {
				p.SeenRunning = now
				p.StartedAt = cs.State.Running.StartedAt
			}
		}
	}
}

// get returns a copy of the current pod called name.
func (w *watcher) get(name string) (pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.byName[name]
	if !ok {
		return pod{}, false
	}
	return *p, true
}

// byID returns a copy of the pod with uid.
func (w *watcher) byID(uid string) (pod, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.byUID[uid]
	if !ok {
		return pod{}, false
	}
	return *p, true
}

// ready returns the names of the ready pods, sorted.
func (w *watcher) ready() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	for n, p := range w.byName {
		if p.Ready && p.IP != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// dial opens a connection to a pod by its stable name (the first label
// of the host: arbor-N.arbor-headless…) at the IP it has now, or to the
// client Service by its name.
func (w *watcher) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ip := ""
	w.mu.Lock()
	if host == serviceHost {
		ip = w.svcIP
	} else if p, ok := w.byName[strings.SplitN(host, ".", 2)[0]]; ok {
		ip = p.IP
	}
	w.mu.Unlock()
	if ip == "" {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("%s has no address now", host)}
	}
	var d net.Dialer
	return d.DialContext(ctx, network, net.JoinHostPort(ip, port))
}
