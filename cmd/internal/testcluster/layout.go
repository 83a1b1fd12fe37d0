package testcluster

import (
	"os"
	"path/filepath"
)

// Layout is a run's directory: pki/ holds the cluster's certificates,
// nodes/<id> each node's data directory, logs/<id>.log each node's
// output.
type Layout string

// PKI is the certificates' directory.
func (l Layout) PKI() string { return filepath.Join(string(l), "pki") }

// CAFile is the CA certificate the nodes' certificates chain to.
func (l Layout) CAFile() string { return filepath.Join(l.PKI(), "ca.pem") }

// NodeDir is node's data directory.
func (l Layout) NodeDir(node string) string { return filepath.Join(string(l), "nodes", node) }

// LogDir is the directory of the nodes' logs.
func (l Layout) LogDir() string { return filepath.Join(string(l), "logs") }

// LogFile is node's log.
func (l Layout) LogFile(node string) string { return filepath.Join(l.LogDir(), node+".log") }

// WipeDir removes everything inside dir but keeps dir itself, which a
// container may have mounted: a node started on it begins with no state.
func WipeDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
