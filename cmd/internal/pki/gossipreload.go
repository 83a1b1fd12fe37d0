package pki

import (
	"bytes"
	"log/slog"
	"slices"
)

// GossipKeyReloader re-reads the --gossip-key files and hands changed keys
// to the running node (cluster.Node.SetGossipKeys), so each step of a key
// rotation is a file rollout, not a restart; the caller runs Check about
// every CheckInterval. Keys given inline cannot change. A file that cannot
// be used is logged as an error and the keys in use stay.
type GossipKeyReloader struct {
	values []string // the --gossip-key values, in order
	files  []string // those of them that are files
	stamps []fileStamp
	keys   [][]byte // in use
	apply  func([][]byte) error
	logger *slog.Logger
}

// NewGossipKeyReloader starts from keys, the decoded values.
func NewGossipKeyReloader(values []string, keys [][]byte, apply func([][]byte) error, logger *slog.Logger) *GossipKeyReloader {
	r := &GossipKeyReloader{values: values, keys: keys, apply: apply, logger: logger}
	for _, v := range values {
		if !isInlineGossipKey(v) {
			r.files = append(r.files, v)
		}
	}
	r.stamps = r.stat()
	return r
}

// check reloads the keys if a file changed since the last look. A broken
// file is reported once and retried when it changes again.
func (r *GossipKeyReloader) Check() {
	stamps := r.stat()
	if slices.Equal(stamps, r.stamps) {
		return
	}
	r.stamps = stamps
	keys, err := DecodeGossipKeys(r.values)
	if err != nil {
		r.logger.Error("gossip key file changed on disk but cannot be used; keeping the keys in use", "err", err)
		return
	}
	if slices.EqualFunc(keys, r.keys, bytes.Equal) {
		return
	}
	if err := r.apply(keys); err != nil {
		r.logger.Error("cannot change the gossip keys; keeping the keys in use", "err", err)
		return
	}
	r.keys = keys
	r.logger.Info("gossip keys reloaded", "in_use", GossipKeyID(keys[0]), "keys", GossipKeyIDs(keys))
}

// stat stamps the key files, in order.
func (r *GossipKeyReloader) stat() []fileStamp {
	s := make([]fileStamp, len(r.files))
	for i, f := range r.files {
		s[i] = statFile(f)
	}
	return s
}
