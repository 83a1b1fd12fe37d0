package pki

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/arbordb/arbor/cmd/internal/atomicfile"
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

// gitIgnoreFile is what ignoreKeysInGit writes: every private key a certs
// command writes into the directory (*-key.pem: the CA's, the old CA's
// and each host's) and the gossip keys.
const gitIgnoreFile = `# Written by arbor certs: private keys never belong in git.
*-key.pem
gossip.key
`

// ignoreKeysInGit writes dir/.gitignore when dir is inside a git work
// tree and has none, so that a certificate directory made inside a
// project cannot be committed with its keys by accident. It returns the
// file's name when it wrote it.
func ignoreKeysInGit(dir string) (string, error) {
	if !insideGitWorkTree(dir) || exists(filepath.Join(dir, ".gitignore")) {
		return "", nil
	}
	if err := atomicfile.Write(filepath.Join(dir, ".gitignore"), []byte(gitIgnoreFile), 0o644); err != nil {
		return "", err
	}
	return ".gitignore", nil
}

// insideGitWorkTree reports whether dir or one of its parents holds .git
// (a directory, or the file of a linked work tree or submodule).
func insideGitWorkTree(dir string) bool {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	for {
		if exists(filepath.Join(abs, ".git")) {
			return true
		}
		parent := filepath.Dir(abs)
		if parent == abs {
			return false
		}
		abs = parent
	}
}
