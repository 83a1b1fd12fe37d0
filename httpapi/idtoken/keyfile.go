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
	// missing is set while the file cannot even be looked at (stat
	// fails), so that its absence is reported once, not every second.
	missing bool
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
		f.missing = true
		return fmt.Errorf("key file %s: %w", f.path, err)
	}
	f.missing = false
	return f.loadWith(fi)
}

// kept adds to a failed re-read's error what stays trusted meanwhile.
func (f *keyFile) kept(err error) error {
	return fmt.Errorf("%w; the %d key(s) last loaded from it stay trusted", err, len(f.keys))
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
// rather than wait. A request never fails for the operator's mistake while
// good keys are still loaded: what went wrong goes to the listeners.
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
	var failures []error
	dirty := false
	for _, f := range v.files {
		fi, err := os.Stat(f.path)
		if err != nil {
			if !f.missing {
				f.missing = true
				failures = append(failures, f.kept(fmt.Errorf("key file %s: %w", f.path, err)))
			}
			continue
		}
		f.missing = false
		if !f.changed(fi) {
			continue
		}
		if err := f.loadWith(fi); err != nil {
			failures = append(failures, f.kept(err))
			continue
		}
		dirty = true
	}
	changed := dirty && v.publishKeys()
	v.reloadMu.Unlock()
	v.listeners.notify(changed, failures)
}

// Check looks at the key files as Verify does, at most once per second,
// and re-reads those that changed. A server calls it periodically so that
// a key removed from a file stops being trusted, and the listeners hear
// of it, even while no token arrives to trigger the look.
func (v *Verifier) Check() {
	v.maybeReload(v.now())
}

// Reload re-reads every key file now, whether or not it changed, and
// returns what went wrong; the listeners hear of it too. Files that fail
// keep their previous keys.
func (v *Verifier) Reload() error {
	v.reloadMu.Lock()
	var errs []error
	for _, f := range v.files {
		if err := f.load(); err != nil {
			errs = append(errs, f.kept(err))
		}
	}
	changed := v.publishKeys()
	v.reloadMu.Unlock()
	v.listeners.notify(changed, errs)
	return errors.Join(errs...)
}

// publishKeys installs the files' current keys and reports whether they
// changed. Only a real change of keys clears the cache: tokens verified
// with a key that is gone must stop working, but touching a file should
// not cost every user a re-verify. Callers hold reloadMu.
func (v *Verifier) publishKeys() bool {
	old := v.keys.Load()
	lists := make([][]*publicKey, len(v.files))
	for i, f := range v.files {
		lists[i] = f.keys
	}
	ks := newKeySet(lists, old.gen+1)
	if ks.fingerprint == old.fingerprint {
		return false
	}
	v.keys.Store(ks)
	v.cache.reset(ks.gen)
	return true
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
