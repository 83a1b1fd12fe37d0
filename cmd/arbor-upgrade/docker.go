package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sync"

	"github.com/arbordb/arbor/cmd/internal/testcluster"
)

// label marks every container and network of a run (value: the run id),
// so cleanup removes exactly those, even after a partial setup.
const label = "arbor-upgrade"

// containers runs the nodes as containers of the two images on one
// project network, where each node is reachable by its id (a network
// alias), as pods are through a headless Service. Replacing a node
// removes its container and runs a new one of the new image with the
// same name, flags and data directory (bind-mounted), so it comes back
// on a new IP under the same name, as a StatefulSet pod does.
type containers struct {
	oldImage, newImage string
	dir                string // pki/, nodes/<id> (mounted as /data), logs/
	secret             string
	runID              string

	mu    sync.Mutex
	https map[string]string // node → published HTTPS address on 127.0.0.1
	user  string            // uid:gid the nodes run as
}

func (d *containers) layout() testcluster.Layout { return testcluster.Layout(d.dir) }
func (d *containers) name() string               { return "docker" }
func (d *containers) caFile() string             { return d.layout().CAFile() }
func (d *containers) dataDir(id string) string   { return d.layout().NodeDir(id) }
func (d *containers) network() string            { return "arbor-upgrade-" + d.runID }
func (d *containers) runLabel() string           { return label + "=" + d.runID }

func (d *containers) container(id string) testcluster.Container {
	return testcluster.Container{Name: d.network() + "-" + id}
}

func (d *containers) addrs() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return maps.Clone(d.https)
}

// containerServe is node's command line in its container, but the flags
// serveFlags adds.
func containerServe(id string) testcluster.Serve {
	return testcluster.ContainerServe(id, nodes, testcluster.ContainerGossipPort)
}

func (d *containers) setup(ctx context.Context) error {
	for _, img := range []string{d.oldImage, d.newImage} {
		if err := testcluster.ImageExists(ctx, img); err != nil {
			return fmt.Errorf("image %s: %w", img, err)
		}
	}
	// The nodes run as the caller, who then owns (and can delete) what
	// they write; root is mapped to the image's unprivileged user.
	d.user = testcluster.HostUser()
	if os.Getuid() == 0 {
		d.user = "65532:65532"
	}
	l := d.layout()
	dirs := []string{l.PKI(), l.LogDir()}
	for _, id := range nodes {
		dirs = append(dirs, l.NodeDir(id))
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if os.Getuid() == 0 {
			if err := os.Chown(dir, 65532, 65532); err != nil {
				return err
			}
		}
	}
	// The old image's own `arbor certs init`.
	if err := testcluster.CertsInitImage(ctx, d.oldImage, l.PKI(), d.runLabel(), d.user, nodes); err != nil {
		return err
	}
	addrs, err := testcluster.FreeAddrs(nodes)
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.https = addrs
	d.mu.Unlock()
	if err := testcluster.CreateNetwork(ctx, d.network(), d.runLabel(), false); err != nil {
		return err
	}
	for _, id := range nodes {
		if err := d.run(ctx, id, false); err != nil {
			return err
		}
	}
	return nil
}

// run starts node's container from the new or the old image.
func (d *containers) run(ctx context.Context, id string, newRelease bool) error {
	image := d.oldImage
	if newRelease {
		image = d.newImage
	}
	d.mu.Lock()
	addr := d.https[id]
	d.mu.Unlock()
	_, err := testcluster.RunContainer(ctx, testcluster.ContainerSpec{
		Name:        d.container(id).Name,
		Image:       image,
		Label:       d.runLabel(),
		Network:     d.network(),
		Alias:       id,
		Hostname:    id,
		User:        d.user,
		StopTimeout: stopWait,
		HTTPAddr:    addr,
		DataDir:     d.dataDir(id),
		CertDir:     d.layout().PKI(),
		Args:        releaseArgs(serveFlags(containerServe(id), d.secret), newRelease),
	})
	return err
}

func (d *containers) stop(ctx context.Context, id string) error {
	c := d.container(id)
	if err := c.Stop(ctx, stopWait); err != nil {
		return err
	}
	// docker stop kills after the grace period without complaint: the
	// exit code tells (137 = SIGKILL).
	code, err := c.ExitCode(ctx)
	d.saveLog(ctx, id)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("%s exited with status %d after SIGTERM (see logs/%s.log)", id, code, id)
	}
	return c.Remove(ctx)
}

// saveLog appends the container's output to logs/<id>.log.
func (d *containers) saveLog(ctx context.Context, id string) {
	out, _ := d.container(id).Logs(ctx)
	f, err := os.OpenFile(d.layout().LogFile(id), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "=== arbor-upgrade: container %s\n", d.container(id).Name)
	_, _ = f.Write(out)
}

func (d *containers) startNew(ctx context.Context, id string) error {
	return d.run(ctx, id, true)
}

// release runs `arbor version` inside the running container: the binary
// that really serves.
func (d *containers) release(ctx context.Context, id string) (string, error) {
	out, err := d.container(id).Exec(ctx, "/arbor", "version")
	if err != nil {
		return "", err
	}
	return parseRelease(out)
}

// cleanup saves every node's log and removes the run's containers and
// network.
func (d *containers) cleanup(ctx context.Context) error {
	return testcluster.RemoveLabeled(ctx, d.runLabel(), func() {
		for _, id := range nodes {
			d.saveLog(ctx, id)
		}
	})
}
