package testcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestContainerSpecArgs: the docker flags of a node's container.
func TestContainerSpecArgs(t *testing.T) {
	s := ContainerSpec{Name: "c1", Image: "arbor:x", Label: "l=1", Network: "net", Alias: "n1", Hostname: "n1-host", User: "1:2",
		StopTimeout: 30 * time.Second, HTTPAddr: "127.0.0.1:4000", DataDir: "/run/nodes/n1", CertDir: "/run/pki", Args: []string{"serve", "--node-id", "n1"}}
	got := strings.Join(s.dockerArgs(), " ")
	want := "--name c1 --label l=1 --network net --network-alias n1 --hostname n1-host --user 1:2 --read-only --stop-timeout 30" +
		" -p 127.0.0.1:4000:8443 -v /run/nodes/n1:/data -v /run/pki:/certs:ro arbor:x serve --node-id n1"
	if got != want {
		t.Errorf("docker args\n%s\nwant\n%s", got, want)
	}
	s.Alias = ""
	if strings.Contains(strings.Join(s.dockerArgs(), " "), "--network-alias") {
		t.Error("an empty alias is passed on")
	}
}

func TestSignalName(t *testing.T) {
	for sig, want := range map[syscall.Signal]string{syscall.SIGTERM: "TERM", syscall.SIGQUIT: "QUIT", syscall.SIGKILL: "KILL", syscall.SIGUSR1: "10"} {
		if sig == syscall.SIGUSR1 && int(sig) != 10 {
			continue // the number differs outside Linux
		}
		if got := signalName(sig); got != want {
			t.Errorf("signalName(%d) = %q, want %q", sig, got, want)
		}
	}
}

func TestPairNetworks(t *testing.T) {
	if got := pairs([]string{"n1", "n2", "n3"}); !slices.Equal(got, [][2]string{{"n1", "n2"}, {"n1", "n3"}, {"n2", "n3"}}) {
		t.Errorf("Pairs = %v", got)
	}
	m := &PairNetworks{Prefix: "run"}
	if m.Network("n3", "n1") != "run-n1-n3" || m.Network("n1", "n3") != "run-n1-n3" {
		t.Errorf("Network = %s", m.Network("n3", "n1"))
	}
	// Healing what was never cut touches nothing.
	if err := m.Heal(context.Background()); err != nil {
		t.Error(err)
	}
}

// needDocker skips the test unless a Docker engine answers.
func needDocker(t *testing.T) {
	t.Helper()
	if !DockerAvailable(context.Background()) {
		t.Skip("no Docker engine answers (docker info): the Docker tests are skipped")
	}
}

// TestDockerNetworksAndCleanup, with a Docker engine: a missing image is
// reported, and RemoveLabeled removes the networks of one label only.
func TestDockerNetworksAndCleanup(t *testing.T) {
	needDocker(t)
	ctx := context.Background()
	if err := ImageExists(ctx, "testcluster.invalid/no-such-image:never"); err == nil {
		t.Error("a missing image exists")
	}
	b := make([]byte, 4)
	rand.Read(b)
	run := "testcluster-test-" + hex.EncodeToString(b)
	label := "testcluster-test=" + run
	t.Cleanup(func() { RemoveLabeled(context.Background(), label, nil) })
	for _, name := range []string{run + "-a", run + "-b"} {
		if err := CreateNetwork(ctx, name, label, name == run+"-b"); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := docker(ctx, "network", "inspect", "--format", "{{.Internal}}", run+"-b"); err != nil || out != "true" {
		t.Errorf("internal network: %q %v", out, err)
	}
	called := false
	if err := RemoveLabeled(ctx, label, func() { called = true }); err != nil {
		t.Fatal(err)
	}
	if called {
		t.Error("beforeRemoving called without containers")
	}
	if out, err := docker(ctx, "network", "ls", "-q", "--filter", "label="+label); err != nil || out != "" {
		t.Errorf("networks left: %q %v", out, err)
	}
}
