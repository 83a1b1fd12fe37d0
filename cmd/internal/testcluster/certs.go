package testcluster

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// CertsInit issues a cluster's certificates into dir with binary's
// `arbor certs init`: a CA (ca.pem), a certificate and key for each of
// hosts (<host>.pem, <host>-key.pem) and a gossip key (gossip.key).
func CertsInit(ctx context.Context, binary, dir string, hosts []string) error {
	out, err := exec.CommandContext(ctx, binary, "certs", "init", "--dir", dir, "--hosts", strings.Join(hosts, ",")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("arbor certs init: %w\n%s", err, out)
	}
	return nil
}

// CertsInitImage is CertsInit with the image's own `arbor certs init`
// (no host binary needed) writing into the host directory dir. The
// container runs as user (HostUser, so the nodes, run as the same user,
// can read the 0600 keys), without a network, labelled label
// ("key=value").
func CertsInitImage(ctx context.Context, image, dir, label, user string, hosts []string) error {
	_, err := docker(ctx, "run", "--rm", "--label", label, "--user", user, "--network", "none",
		"-v", dir+":/pki", image, "certs", "init", "--dir", "/pki", "--hosts", strings.Join(hosts, ","))
	return err
}
