package idtoken

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// recheckEvery bounds how often Verify looks at the key files: a stat per
// request would be wasted work, and rotations are not that urgent.
const recheckEvery = time.Second

// maxKeyFileSize stops a wrong path (a log file, a device) from being read
// into memory; Google's x509 JSON is a few kilobytes.
const maxKeyFileSize = 4 << 20

// keyFile is one operator-supplied key file and what was last loaded from
// it. Its fields are guarded by Verifier.reloadMu.
type keyFile struct {
	path string
	// stat describes the file as it was just before the last read
	// attempt, so that a write that lands during or after the read still
	// looks like a change next time.
	stat os.FileInfo
	keys []*publicKey // from the last successful read
}

// changed reports whether the file may differ from the last read. A
// replaced file (an atomic rename, or a Kubernetes ConfigMap's symlink
// swap) can carry an older modification time, so its identity is compared
// too.
func (f *keyFile) changed(fi os.FileInfo) bool {
	old := f.stat
	return old == nil || !os.SameFile(old, fi) || !old.ModTime().Equal(fi.ModTime()) || old.Size() != fi.Size()
}

// load reads and parses the file. On failure the previous keys stay, since
// a half-written or briefly missing file must not lock every user out.
func (f *keyFile) load() error {
	fi, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("key file %s: %w", f.path, err)
	}
	return f.loadWith(fi)
}

func (f *keyFile) loadWith(fi os.FileInfo) error {
	// Recorded even if the contents are bad: the file is not retried until
	// it changes again, instead of being re-parsed every second.
	f.stat = fi
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("key file %s: not a regular file", f.path)
	}
	data, err := readLimited(f.path)
	if err != nil {
		return fmt.Errorf("key file %s: %w", f.path, err)
	}
	keys, err := parseKeys(data)
	if err != nil {
		return fmt.Errorf("key file %s: %w", f.path, err)
	}
	f.keys = keys
	return nil
}

// maybeReload re-reads changed key files at most once per recheckEvery.
// Only one caller does the work; the others carry on with the current keys
// rather than wait. Errors are dropped here (Reload reports them), because
// a request must not fail for the operator's mistake while good keys are
// still loaded.
func (v *Verifier) maybeReload(now time.Time) {
	if len(v.files) == 0 {
		return
	}
	last := v.lastCheck.Load()
	n := now.UnixNano()
	if n-last < int64(recheckEvery) && n >= last {
		// n < last means the clock went backwards; check rather than
		// stall until it catches up.
		return
	}
	if !v.lastCheck.CompareAndSwap(last, n) {
		return
	}
	if !v.reloadMu.TryLock() {
		return // a Reload is already under way
	}
	defer v.reloadMu.Unlock()
	dirty := false
	for _, f := range v.files {
		fi, err := os.Stat(f.path)
		if err != nil || !f.changed(fi) {
			continue
		}
		if f.loadWith(fi) == nil {
			dirty = true
		}
	}
	if dirty {
		v.publishKeys()
	}
}

// Reload re-reads every key file now, whether or not it changed, and
// returns what went wrong, for callers to log (Verify's own periodic
// reloads stay silent). Files that fail keep their previous keys.
func (v *Verifier) Reload() error {
	v.reloadMu.Lock()
	defer v.reloadMu.Unlock()
	var errs []error
	for _, f := range v.files {
		if err := f.load(); err != nil {
			errs = append(errs, err)
		}
	}
	v.publishKeys()
	return errors.Join(errs...)
}

// publishKeys installs the files' current keys. Only a real change of keys
// clears the cache: tokens verified with a key that is gone must stop
// working, but touching a file should not cost every user a re-verify.
// Callers hold reloadMu.
func (v *Verifier) publishKeys() {
	old := v.keys.Load()
	lists := make([][]*publicKey, len(v.files))
	for i, f := range v.files {
		lists[i] = f.keys
	}
	ks := newKeySet(lists, old.gen+1)
	if ks.fingerprint == old.fingerprint {
		return
	}
	v.keys.Store(ks)
	v.cache.reset(ks.gen)
}

// readLimited reads at most maxKeyFileSize bytes; the limit applies to
// what is read, not to the size stat saw, since the file may grow.
func readLimited(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, maxKeyFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxKeyFileSize {
		return nil, fmt.Errorf("larger than %d bytes", maxKeyFileSize)
	}
	return data, nil
}
