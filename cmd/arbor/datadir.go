package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// addrFileName is the file in the data directory that holds the address
// the HTTPS server actually listens on, so tools and tests started with
// --http-addr 127.0.0.1:0 can find the port.
const addrFileName = "http.addr"

// addrFile is the path of the listening-address file in dataDir.
func addrFile(dataDir string) string { return filepath.Join(dataDir, addrFileName) }

// prepareDataDir creates the data directory (private to this user) and
// removes the address file a previous run may have left, so nobody reads
// a stale port while this run starts.
func prepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	if err := os.Remove(addrFile(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale address file: %w", err)
	}
	return nil
}
