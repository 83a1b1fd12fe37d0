package pki

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/arbordb/arbor/cluster"
	"github.com/arbordb/arbor/cmd/internal/atomicfile"
)

// gossipKeyLen is the AES-256 key size memberlist uses.
const gossipKeyLen = cluster.GossipKeyLen

// DecodeGossipKeys reads the --gossip-key values in order and returns
// their keys, the first one (the key gossip is sealed with) first and
// every key once.
func DecodeGossipKeys(values []string) ([][]byte, error) {
	var keys [][]byte
	for _, v := range values {
		ks, err := decodeGossipKeyValue(v)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			if !slices.ContainsFunc(keys, func(have []byte) bool { return bytes.Equal(have, k) }) {
				keys = append(keys, k)
			}
		}
	}
	return keys, nil
}

// decodeGossipKeyValue reads one --gossip-key value: the base64 text of a
// 32-byte key, or the path of a file holding one or more (so keys stay
// out of ps output, and a file can carry a rotation).
func decodeGossipKeyValue(v string) ([][]byte, error) {
	key, err := base64.StdEncoding.DecodeString(v)
	if err == nil && len(key) == gossipKeyLen {
		return [][]byte{key}, nil
	}
	b, readErr := os.ReadFile(v)
	if readErr != nil {
		if err == nil {
			return nil, fmt.Errorf("the key is %d bytes, want %d", len(key), gossipKeyLen)
		}
		return nil, fmt.Errorf("neither base64 nor a readable file: %w", readErr)
	}
	keys, err := parseGossipKeyFile(b)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", v, err)
	}
	return keys, nil
}

// isInlineGossipKey reports whether a --gossip-key value is a key itself
// rather than a file name.
func isInlineGossipKey(v string) bool {
	key, err := base64.StdEncoding.DecodeString(v)
	return err == nil && len(key) == gossipKeyLen
}

// parseGossipKeyFile reads a key file: one base64 key per line, the first
// in use; blank lines and lines starting with # are skipped.
func parseGossipKeyFile(b []byte) ([][]byte, error) {
	var keys [][]byte
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: not base64: %w", i+1, err)
		}
		if len(key) != gossipKeyLen {
			return nil, fmt.Errorf("line %d: the key is %d bytes, want %d", i+1, len(key), gossipKeyLen)
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, errors.New("no key in the file")
	}
	return keys, nil
}

// formatGossipKeyFile writes keys in parseGossipKeyFile's format.
func formatGossipKeyFile(keys [][]byte) []byte {
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(base64.StdEncoding.EncodeToString(k))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// readGossipKeyFile reads path's keys; a missing file holds none.
func readGossipKeyFile(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	keys, err := parseGossipKeyFile(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return keys, nil
}

// addGossipKey appends a new random key to path's keys (creating the
// file, mode 0600) and returns them all.
func addGossipKey(path string) ([][]byte, error) {
	keys, err := readGossipKeyFile(path)
	if err != nil {
		return nil, err
	}
	key := make([]byte, gossipKeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	keys = append(keys, key)
	return keys, atomicfile.Write(path, formatGossipKeyFile(keys), 0o600)
}

// GossipKeyID names a key in logs and in `arbor certs gossip-key` output
// without giving it away: the first 8 hex digits of its SHA-256, so an
// operator can see which key each node uses.
func GossipKeyID(key []byte) string {
	sum := sha256.Sum256(key)
	return hex.EncodeToString(sum[:4])
}

// GossipKeyIDs names keys, in order.
func GossipKeyIDs(keys [][]byte) []string {
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = GossipKeyID(k)
	}
	return ids
}
