package nemesis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/arbordb/arbor/cmd/internal/client"
)

// dockerTimeout bounds one docker CLI call.
const dockerTimeout = 90 * time.Second

// Label marks every container and network a run creates, with the run id
// as value, so Cleanup finds them even after a partial Setup, and never
// touches anything else.
const Label = "arbor-chaos"

// Docker runs the nodes as containers of the arbor image and partitions
// them with Docker networks alone — no iptables, which a scratch image
// does not have:
//
//   - each pair of nodes shares its own internal network ("pair network"),
//     where each node has its node id as network alias. A node resolving a
//     peer's name through Docker's DNS gets the peer's address on the one
//     network they share, so Raft (which dials names, SPEC §10) uses the
//     pair link. Cutting a link is `docker network disconnect` of one node
//     from the pair's network; healing reconnects it with its alias.
//     Isolating a node cuts both of its links, a bridge partition cuts one.
//   - each node also has a private network of its own, never cut, which
//     carries its published HTTPS port on 127.0.0.1 — so clients keep
//     reaching a partitioned node, and see what it answers.
//
// Gossip (memberlist) assumes every node reaches every other's advertised
// address, which is on one pair network only; it still finds every node
// through indirect probes, but its health view flaps. Raft, reads and
// writes are unaffected: gossip is for discovery only (cluster/DESIGN.md).
type Docker struct {
	Image string // e.g. arbor:0.0.0-dev
	Dir   string // run directory: pki/, nodes/nX (mounted as /data)
	Opts  NodeOptions
	RunID string
	// GossipPort is the container's --gossip-addr port (default 8301).
	GossipPort int

	mu        sync.Mutex
	ports     map[string]int       // node → published HTTPS port on 127.0.0.1
	cut       map[[2]string]string // cut pair → the node disconnected from its network
	setupDone bool
}

// Name implements Backend.
func (d *Docker) Name() string { return "docker" }

// Nodes implements Backend.
func (d *Docker) Nodes() []string { return NodeNames }

// CAFile implements Backend.
func (d *Docker) CAFile() string { return filepath.Join(d.Dir, "pki", "ca.pem") }

// Partitions implements Backend.
func (d *Docker) Partitions() bool { return true }

func (d *Docker) container(node string) string { return "arbor-chaos-" + d.RunID + "-" + node }

func (d *Docker) ownNetwork(node string) string { return "arbor-chaos-" + d.RunID + "-" + node }

// pairNetwork is the network of the link between a and b (in node order).
func (d *Docker) pairNetwork(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return "arbor-chaos-" + d.RunID + "-" + a + "-" + b
}

// Available reports whether a Docker daemon answers.
func Available(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

// docker runs one docker CLI command and returns its standard output.
func docker(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// Setup implements Backend.
func (d *Docker) Setup(ctx context.Context) error {
	if d.GossipPort == 0 {
		d.GossipPort = 8301
	}
	if _, err := docker(ctx, "image", "inspect", "--format", "{{.Id}}", d.Image); err != nil {
		return fmt.Errorf("nemesis: image %s not found (make image builds it): %w", d.Image, err)
	}
	user := strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
	label := Label + "=" + d.RunID
	pki := filepath.Join(d.Dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return fmt.Errorf("nemesis: %w", err)
	}
	// The image's own `arbor certs init`: no host binary needed. As the
	// caller's user, so the nodes (same user) can read the 0600 keys.
	if _, err := docker(ctx, "run", "--rm", "--label", label, "--user", user, "--network", "none",
		"-v", pki+":/pki", d.Image, "certs", "init", "--dir", "/pki", "--hosts", strings.Join(NodeNames, ",")); err != nil {
		return err
	}
	ports, err := freePorts(len(NodeNames))
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.ports = map[string]int{}
	d.cut = map[[2]string]string{}
	for i, n := range NodeNames {
		d.ports[n] = ports[i]
	}
	d.mu.Unlock()

	for _, n := range NodeNames {
		if _, err := docker(ctx, "network", "create", "--label", label, d.ownNetwork(n)); err != nil {
			return err
		}
	}
	for _, p := range pairs() {
		// Internal: the pair networks carry node-to-node traffic only.
		if _, err := docker(ctx, "network", "create", "--internal", "--label", label, d.pairNetwork(p[0], p[1])); err != nil {
			return err
		}
	}
	for _, n := range NodeNames {
		data := filepath.Join(d.Dir, "nodes", n)
		if err := os.MkdirAll(data, 0o700); err != nil {
			return fmt.Errorf("nemesis: %w", err)
		}
		var join []string
		for _, m := range NodeNames {
			if m != n {
				join = append(join, m+":"+strconv.Itoa(d.GossipPort))
			}
		}
		args := []string{"create",
			"--name", d.container(n),
			"--label", label,
			// Not the node id: the node must resolve its own id through
			// Docker's DNS (its pair-network address), not /etc/hosts.
			"--hostname", n + "-host",
			"--network", d.ownNetwork(n),
			"-p", "127.0.0.1:" + strconv.Itoa(d.ports[n]) + ":8443",
			"--user", user,
			"--read-only",
			"--stop-timeout", strconv.Itoa(int(stopWait / time.Second)),
			"-v", data + ":/data",
			"-v", pki + ":/certs:ro",
			d.Image,
			"serve",
			"--node-id", n,
			"--data-dir", "/data",
			"--http-addr", ":8443",
			"--raft-addr", ":8300",
			"--gossip-addr", ":" + strconv.Itoa(d.GossipPort),
			"--advertise-host", n,
			"--join", strings.Join(join, ","),
			"--bootstrap-expect", strconv.Itoa(len(NodeNames)),
			"--tls-ca", "/certs/ca.pem",
			"--tls-cert", "/certs/" + n + ".pem",
			"--tls-key", "/certs/" + n + "-key.pem",
			"--gossip-key", "/certs/gossip.key",
		}
		if _, err := docker(ctx, append(args, d.Opts.flags()...)...); err != nil {
			return err
		}
	}
	for _, p := range pairs() {
		for _, n := range p {
			if _, err := docker(ctx, "network", "connect", "--alias", n, d.pairNetwork(p[0], p[1]), d.container(n)); err != nil {
				return err
			}
		}
	}
	for _, n := range NodeNames {
		if _, err := docker(ctx, "start", d.container(n)); err != nil {
			return err
		}
	}
	d.mu.Lock()
	d.setupDone = true
	d.mu.Unlock()
	return nil
}

// pairs lists every pair of nodes.
func pairs() [][2]string {
	var ps [][2]string
	for i, a := range NodeNames {
		for _, b := range NodeNames[i+1:] {
			ps = append(ps, [2]string{a, b})
		}
	}
	return ps
}

// Endpoints implements Backend.
func (d *Docker) Endpoints() []client.Endpoint {
	d.mu.Lock()
	defer d.mu.Unlock()
	var eps []client.Endpoint
	for _, n := range NodeNames {
		if p, ok := d.ports[n]; ok {
			eps = append(eps, client.Endpoint{Node: n, Addr: "127.0.0.1:" + strconv.Itoa(p)})
		}
	}
	return eps
}

// Kill implements Backend.
func (d *Docker) Kill(ctx context.Context, node string) error {
	if _, err := docker(ctx, "kill", "--signal", "KILL", d.container(node)); err != nil {
		return err
	}
	_, err := docker(ctx, "wait", d.container(node))
	return err
}

// Wipe implements Backend: the node's directory is a bind mount.
func (d *Docker) Wipe(_ context.Context, node string) error {
	return wipeDir(filepath.Join(d.Dir, "nodes", node))
}

// Stop implements Backend: SIGTERM, and like Process.Stop a goroutine
// dump (SIGQUIT) for a node still running stopGrace later. (docker stop
// would only SIGKILL it, hiding where it hung.)
func (d *Docker) Stop(ctx context.Context, node string) (time.Duration, error) {
	c := d.container(node)
	start := time.Now()
	if _, err := docker(ctx, "kill", "--signal", "TERM", c); err != nil {
		return 0, err
	}
	if d.waitExit(ctx, c, stopGrace) {
		took := time.Since(start)
		// 0 is a clean exit; anything else (137: killed) is not.
		if code, err := docker(ctx, "inspect", "--format", "{{.State.ExitCode}}", c); err == nil && code != "0" {
			return took, fmt.Errorf("nemesis: %s exited with code %s after SIGTERM", node, code)
		}
		return took, nil
	}
	docker(ctx, "kill", "--signal", "QUIT", c)
	if !d.waitExit(ctx, c, dumpWait) {
		docker(ctx, "kill", "--signal", "KILL", c)
		d.waitExit(ctx, c, stopWait)
	}
	return time.Since(start), fmt.Errorf("nemesis: %s still running %s after SIGTERM; goroutine dump (SIGQUIT) in its log", node, stopGrace)
}

// waitExit waits at most d for the container to stop running.
func (d *Docker) waitExit(ctx context.Context, c string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := docker(ctx, "wait", c)
	return err == nil
}

// Start implements Backend.
func (d *Docker) Start(ctx context.Context, node string) error {
	_, err := docker(ctx, "start", d.container(node))
	return err
}

// Pause implements Backend, with the cgroup freezer.
func (d *Docker) Pause(ctx context.Context, node string) error {
	_, err := docker(ctx, "pause", d.container(node))
	return err
}

// Resume implements Backend.
func (d *Docker) Resume(ctx context.Context, node string) error {
	_, err := docker(ctx, "unpause", d.container(node))
	return err
}

// Cut implements Backend: each pair's link is cut by disconnecting its
// first node from the pair's network.
func (d *Docker) Cut(ctx context.Context, ps [][2]string) error {
	for _, p := range ps {
		key := pairKey(p)
		d.mu.Lock()
		_, done := d.cut[key]
		d.mu.Unlock()
		if done {
			continue
		}
		if _, err := docker(ctx, "network", "disconnect", "--force", d.pairNetwork(p[0], p[1]), d.container(p[0])); err != nil {
			return err
		}
		d.mu.Lock()
		d.cut[key] = p[0]
		d.mu.Unlock()
	}
	return nil
}

func pairKey(p [2]string) [2]string {
	if p[1] < p[0] {
		return [2]string{p[1], p[0]}
	}
	return p
}

// Heal implements Backend.
func (d *Docker) Heal(ctx context.Context) error {
	d.mu.Lock()
	cut := d.cut
	d.cut = map[[2]string]string{}
	d.mu.Unlock()
	var errs []error
	for p, node := range cut {
		if _, err := docker(ctx, "network", "connect", "--alias", node, d.pairNetwork(p[0], p[1]), d.container(node)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CollectLogs implements Backend.
func (d *Docker) CollectLogs(ctx context.Context, dir string) error {
	var errs []error
	for _, n := range NodeNames {
		ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
		out, err := exec.CommandContext(ctx, "docker", "logs", "--timestamps", d.container(n)).CombinedOutput()
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("docker logs %s: %w", n, err))
			continue
		}
		errs = append(errs, os.WriteFile(filepath.Join(dir, n+".log"), out, 0o644))
	}
	return errors.Join(errs...)
}

// Cleanup implements Backend: removes every container and network with
// this run's label (so also those of a Setup that failed half-way).
func (d *Docker) Cleanup(ctx context.Context) error {
	filter := "label=" + Label + "=" + d.RunID
	var errs []error
	if ids, err := docker(ctx, "ps", "-aq", "--filter", filter); err != nil {
		errs = append(errs, err)
	} else if ids != "" {
		if _, err := docker(ctx, append([]string{"rm", "-f", "-v"}, strings.Fields(ids)...)...); err != nil {
			errs = append(errs, err)
		}
	}
	if ids, err := docker(ctx, "network", "ls", "-q", "--filter", filter); err != nil {
		errs = append(errs, err)
	} else if ids != "" {
		if _, err := docker(ctx, append([]string{"network", "rm"}, strings.Fields(ids)...)...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ImageExists reports whether the image is present locally.
func (d *Docker) ImageExists(ctx context.Context) bool {
	_, err := docker(ctx, "image", "inspect", "--format", "{{.Id}}", d.Image)
	return err == nil
}
