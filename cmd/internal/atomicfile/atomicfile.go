// Package atomicfile replaces files so that a reader never sees one half
// written: the address file of a running node and the key material that
// nodes reload from disk while they run.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write replaces path with data so that a reader sees the old content or
// the new, never a half-written file: it writes a temporary file in the
// same directory, syncs it and renames it over path.
func Write(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
