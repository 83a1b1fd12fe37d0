package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The files of a certificate directory (`arbor certs … --dir D`) besides
// each host's <host>.pem and <host>-key.pem. Node flags name them:
//
//	--tls-ca D/ca.pem --tls-cert D/<host>.pem --tls-key D/<host>-key.pem --gossip-key D/gossip.key
const (
	caCertFile    = "ca.pem"         // the CAs nodes and clients trust (old and new during a rotation)
	caKeyFile     = "ca-key.pem"     // the key of the CA that signs; never given to nodes
	oldCACertFile = "ca-old.pem"     // during a CA rotation: the CA being replaced
	oldCAKeyFile  = "ca-old-key.pem" // and its key, kept until the rotation ends
	gossipKeyFile = "gossip.key"     // the gossip keys, one per line, the first one in use
)

// nodeCertHosts lists the hosts that have a certificate and a key in dir
// (<host>.pem beside <host>-key.pem), sorted.
func nodeCertHosts(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, e := range entries {
		name := e.Name()
		host, ok := strings.CutSuffix(name, ".pem")
		if !ok || e.IsDir() || strings.HasSuffix(host, "-key") || slices.Contains([]string{caCertFile, caKeyFile, oldCACertFile, oldCAKeyFile}, name) {
			continue
		}
		if exists(filepath.Join(dir, host+"-key.pem")) {
			hosts = append(hosts, host)
		}
	}
	slices.Sort(hosts)
	return hosts, nil
}

// exists reports whether path names something (a stat error other than
// "not there" counts as there, so that nothing is overwritten blindly).
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}
