package testcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// dockerTimeout bounds one docker CLI call.
const dockerTimeout = 90 * time.Second

// docker runs one docker CLI command, bounded by ctx and dockerTimeout,
// and returns its standard output without surrounding space. The error
// names the command and carries its standard error.
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

// DockerAvailable reports whether a Docker daemon answers (docker info,
// within 15 s).
func DockerAvailable(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

// ImageExists returns nil if image is present locally, else the error
// of docker image inspect.
func ImageExists(ctx context.Context, image string) error {
	_, err := docker(ctx, "image", "inspect", "--format", "{{.Id}}", image)
	return err
}

// ImageSize returns an image's size in bytes.
func ImageSize(ctx context.Context, image string) (int64, error) {
	out, err := docker(ctx, "image", "inspect", "--format", "{{.Size}}", image)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(out, 10, 64)
}

// CreateNetwork creates a Docker network labelled label ("key=value");
// an internal one does not reach beyond its containers.
func CreateNetwork(ctx context.Context, name, label string, internal bool) error {
	args := []string{"network", "create", "--label", label}
	if internal {
		args = append(args, "--internal")
	}
	_, err := docker(ctx, append(args, name)...)
	return err
}

// RemoveLabeled removes every container (with its anonymous volumes),
// then every network, labelled label ("key=value") — so also those of a
// setup that failed half-way, and nothing else. beforeRemoving, if not
// nil, is called first when there are containers, e.g. to save their
// logs.
func RemoveLabeled(ctx context.Context, label string, beforeRemoving func()) error {
	filter := "label=" + label
	var errs []error
	if ids, err := docker(ctx, "ps", "-aq", "--filter", filter); err != nil {
		errs = append(errs, err)
	} else if ids != "" {
		if beforeRemoving != nil {
			beforeRemoving()
		}
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
