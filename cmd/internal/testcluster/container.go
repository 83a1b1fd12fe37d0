package testcluster

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// Where a node listens and keeps its files inside its container.
const (
	containerHTTPPort = 8443
	containerRaftPort = 8300
	containerDataDir  = "/data"
	containerCertDir  = "/certs"
)

// ContainerGossipPort is a node's usual gossip port in its container.
const ContainerGossipPort = 8301

// HostUser is the runner's uid:gid, for containers that write files the
// runner must read and delete (docker --user).
func HostUser() string {
	return strconv.Itoa(os.Getuid()) + ":" + strconv.Itoa(os.Getgid())
}

// ContainerSpec is a node's container: the arbor image running Args,
// read-only but for its data directory, which like the certificates is
// a bind mount, and its HTTPS port published on 127.0.0.1.
type ContainerSpec struct {
	Name     string
	Image    string
	Label    string // "key=value"
	Network  string // the network it starts on
	Alias    string // its name on Network, if any
	Hostname string
	User     string // uid:gid it runs as
	// StopTimeout is how long docker stop waits before SIGKILL.
	StopTimeout time.Duration
	HTTPAddr    string // on the host (127.0.0.1:<port>), published to the node's 8443
	DataDir     string // mounted at /data, the node's --data-dir
	CertDir     string // mounted read-only at /certs
	Args        []string
}

func (s ContainerSpec) dockerArgs() []string {
	args := []string{"--name", s.Name, "--label", s.Label, "--network", s.Network}
	if s.Alias != "" {
		args = append(args, "--network-alias", s.Alias)
	}
	args = append(args,
		"--hostname", s.Hostname,
		"--user", s.User,
		"--read-only",
		"--stop-timeout", strconv.Itoa(int(s.StopTimeout/time.Second)),
		"-p", s.HTTPAddr+":"+strconv.Itoa(containerHTTPPort),
		"-v", s.DataDir+":"+containerDataDir,
		"-v", s.CertDir+":"+containerCertDir+":ro",
		s.Image)
	return append(args, s.Args...)
}

// CreateContainer creates the container without starting it (docker
// create), e.g. to connect it to more networks first.
func CreateContainer(ctx context.Context, s ContainerSpec) (Container, error) {
	_, err := docker(ctx, append([]string{"create"}, s.dockerArgs()...)...)
	return Container{s.Name}, err
}

// RunContainer creates and starts the container (docker run --detach).
func RunContainer(ctx context.Context, s ContainerSpec) (Container, error) {
	_, err := docker(ctx, append([]string{"run", "--detach"}, s.dockerArgs()...)...)
	return Container{s.Name}, err
}

// Container is a Docker container, by name. It implements Signaller.
type Container struct{ Name string }

// Start starts the created or stopped container, on the same data.
func (c Container) Start(ctx context.Context) error {
	_, err := docker(ctx, "start", c.Name)
	return err
}

// Signal sends sig to the container's main process (docker kill).
func (c Container) Signal(ctx context.Context, sig syscall.Signal) error {
	_, err := docker(ctx, "kill", "--signal", signalName(sig), c.Name)
	return err
}

// signalNames are the signals the tools send, as docker kill --signal
// takes them.
var signalNames = map[syscall.Signal]string{
	syscall.SIGTERM: "TERM", syscall.SIGKILL: "KILL", syscall.SIGQUIT: "QUIT",
	syscall.SIGINT: "INT", syscall.SIGHUP: "HUP", syscall.SIGSTOP: "STOP", syscall.SIGCONT: "CONT",
}

// signalName is sig's name without SIG (TERM, KILL, …), or its number.
func signalName(sig syscall.Signal) string {
	if name, ok := signalNames[sig]; ok {
		return name
	}
	return strconv.Itoa(int(sig))
}

// WaitExit waits until the container has stopped running, at most
// timeout, and reports whether it has.
func (c Container) WaitExit(ctx context.Context, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := docker(ctx, "wait", c.Name)
	return err == nil
}

// Kill ends the container with SIGKILL and waits for it to stop.
func (c Container) Kill(ctx context.Context) error {
	if err := c.Signal(ctx, syscall.SIGKILL); err != nil {
		return err
	}
	_, err := docker(ctx, "wait", c.Name)
	return err
}

// Stop is docker stop: SIGTERM, and SIGKILL after timeout — without
// complaint; ExitCode tells (137 for SIGKILL).
func (c Container) Stop(ctx context.Context, timeout time.Duration) error {
	_, err := docker(ctx, "stop", "--time", strconv.Itoa(int(timeout/time.Second)), c.Name)
	return err
}

// ExitCode is the stopped container's exit status.
func (c Container) ExitCode(ctx context.Context) (int, error) {
	out, err := docker(ctx, "inspect", "--format", "{{.State.ExitCode}}", c.Name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out)
}

// Pause freezes the container with the cgroup freezer: its sockets stay
// open and nothing answers.
func (c Container) Pause(ctx context.Context) error {
	_, err := docker(ctx, "pause", c.Name)
	return err
}

// Resume unfreezes a paused container.
func (c Container) Resume(ctx context.Context) error {
	_, err := docker(ctx, "unpause", c.Name)
	return err
}

// Logs is the container's output so far, each line with its time.
func (c Container) Logs(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerTimeout)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "logs", "--timestamps", c.Name).CombinedOutput()
}

// Remove removes the stopped container.
func (c Container) Remove(ctx context.Context) error {
	_, err := docker(ctx, "rm", c.Name)
	return err
}

// Exec runs args in the running container and returns their output.
func (c Container) Exec(ctx context.Context, args ...string) (string, error) {
	return docker(ctx, append([]string{"exec", c.Name}, args...)...)
}

// Connect attaches the container to network, where others reach it as
// alias.
func (c Container) Connect(ctx context.Context, network, alias string) error {
	_, err := docker(ctx, "network", "connect", "--alias", alias, network, c.Name)
	return err
}

// Disconnect detaches the container from network.
func (c Container) Disconnect(ctx context.Context, network string) error {
	_, err := docker(ctx, "network", "disconnect", "--force", network, c.Name)
	return err
}
