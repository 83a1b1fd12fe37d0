package main

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
)

// dockerTimeout bounds one docker CLI call.
const dockerTimeout = 90 * time.Second

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
	ports map[string]int // node → published HTTPS port on 127.0.0.1
	user  string         // uid:gid the nodes run as
}

func (d *containers) name() string             { return "docker" }
func (d *containers) caFile() string           { return filepath.Join(d.dir, "pki", "ca.pem") }
func (d *containers) dataDir(id string) string { return filepath.Join(d.dir, "nodes", id) }

func (d *containers) container(id string) string { return "arbor-upgrade-" + d.runID + "-" + id }
func (d *containers) network() string            { return "arbor-upgrade-" + d.runID }

func (d *containers) addrs() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]string{}
	for id, p := range d.ports {
		out[id] = "127.0.0.1:" + strconv.Itoa(p)
	}
	return out
}

// dockerAvailable reports whether a Docker daemon answers.
func dockerAvailable(ctx context.Context) bool {
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

// imageSize returns an image's size in bytes.
func imageSize(ctx context.Context, image string) (int64, error) {
	out, err := docker(ctx, "image", "inspect", "--format", "{{.Size}}", image)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(out, 10, 64)
}

func (d *containers) setup(ctx context.Context) error {
	for _, img := range []string{d.oldImage, d.newImage} {
		if _, err := docker(ctx, "image", "inspect", "--format", "{{.Id}}", img); err != nil {
			return fmt.Errorf("image %s: %w", img, err)
		}
	}
	// The nodes run as the caller, who then owns (and can delete) what
	// they write; root is mapped to the image's unprivileged user.
	d.user = strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
	if os.Getuid() == 0 {
		d.user = "65532:65532"
	}
	pki := filepath.Join(d.dir, "pki")
	dirs := []string{pki, filepath.Join(d.dir, "logs")}
	for _, id := range nodes {
		dirs = append(dirs, filepath.Join(d.dir, "nodes", id))
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
	lbl := label + "=" + d.runID
	// The old image's own `arbor certs init`.
	if _, err := docker(ctx, "run", "--rm", "--label", lbl, "--user", d.user, "--network", "none",
		"-v", pki+":/pki", d.oldImage, "certs", "init", "--dir", "/pki", "--hosts", strings.Join(nodes, ",")); err != nil {
		return err
	}
	ports, err := freePorts(len(nodes))
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.ports = map[string]int{}
	for i, id := range nodes {
		d.ports[id] = ports[i]
	}
	d.mu.Unlock()
	if _, err := docker(ctx, "network", "create", "--label", lbl, d.network()); err != nil {
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
	var join []string
	for _, other := range nodes {
		if other != id {
			join = append(join, other+":8301")
		}
	}
	d.mu.Lock()
	port := d.ports[id]
	d.mu.Unlock()
	args := []string{"run", "--detach",
		"--name", d.container(id),
		"--label", label + "=" + d.runID,
		"--network", d.network(),
		"--network-alias", id,
		"--hostname", id,
		"--user", d.user,
		"--read-only",
		"--stop-timeout", strconv.Itoa(int(stopWait / time.Second)),
		"-p", "127.0.0.1:" + strconv.Itoa(port) + ":8443",
		"-v", d.dataDir(id) + ":/data",
		"-v", filepath.Join(d.dir, "pki") + ":/certs:ro",
		image,
	}
	serve := append(serveFlags(id, "/data", "/certs", join, d.secret),
		"--http-addr", ":8443", "--raft-addr", ":8300", "--gossip-addr", ":8301", "--advertise-host", id)
	args = append(args, releaseArgs(serve, newRelease)...)
	_, err := docker(ctx, args...)
	return err
}

func (d *containers) stop(ctx context.Context, id string) error {
	c := d.container(id)
	_, err := docker(ctx, "stop", "--time", strconv.Itoa(int(stopWait/time.Second)), c)
	if err != nil {
		return err
	}
	// docker stop kills after the grace period without complaint: the
	// exit code tells (137 = SIGKILL).
	code, err := docker(ctx, "inspect", "--format", "{{.State.ExitCode}}", c)
	d.saveLog(ctx, id)
	if err != nil {
		return err
	}
	if code != "0" {
		return fmt.Errorf("%s exited with status %s after SIGTERM (see logs/%s.log)", id, code, id)
	}
	_, err = docker(ctx, "rm", c)
	return err
}

// saveLog appends the container's output to logs/<id>.log.
func (d *containers) saveLog(ctx context.Context, id string) {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	out, _ := exec.CommandContext(ctx, "docker", "logs", "--timestamps", d.container(id)).CombinedOutput()
	f, err := os.OpenFile(filepath.Join(d.dir, "logs", id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "=== arbor-upgrade: container %s\n", d.container(id))
	_, _ = f.Write(out)
}

func (d *containers) startNew(ctx context.Context, id string) error {
	return d.run(ctx, id, true)
}

// release runs `arbor version` inside the running container: the binary
// that really serves.
func (d *containers) release(ctx context.Context, id string) (string, error) {
	out, err := docker(ctx, "exec", d.container(id), "/arbor", "version")
	if err != nil {
		return "", err
	}
	return parseRelease(out)
}

func (d *containers) cleanup(ctx context.Context) error {
	filter := "label=" + label + "=" + d.runID
	var errs []error
	ids, err := docker(ctx, "ps", "-aq", "--filter", filter)
	if err != nil {
		errs = append(errs, err)
	}
	if ids != "" {
		for _, id := range nodes {
			d.saveLog(ctx, id)
		}
		if _, err := docker(ctx, append([]string{"rm", "-f", "-v"}, strings.Fields(ids)...)...); err != nil {
			errs = append(errs, err)
		}
	}
	nets, err := docker(ctx, "network", "ls", "-q", "--filter", filter)
	if err != nil {
		errs = append(errs, err)
	}
	if nets != "" {
		if _, err := docker(ctx, append([]string{"network", "rm"}, strings.Fields(nets)...)...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
