package tree

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
)

// stackLeafBytes is how many bytes of a leaf's hash input are put
// together on the stack; a leaf with longer strings is streamed into the
// hash instead, so that hashing a 10 MiB string neither copies it into a
// heap buffer of its own nor allocates one.
const stackLeafBytes = 160

// leafDigest is a leaf's hash: SHA-256 over its priority and value. A
// server-value placeholder without priority has none (zero), as it never
// had: only resolved values are stored, so no replica's answer depends
// on it.
func leafDigest(n *Node) [sha256.Size]byte {
	if (n.kind == KindTimestamp || n.kind == KindIncrement) && n.prio == nil {
		return [sha256.Size]byte{}
	}
	// The marker, then kind and 8 bytes for the priority and the value,
	// are 19 bytes besides the strings'.
	strings := len(n.s)
	if n.prio != nil {
		strings += len(n.prio.s)
	}
	if 19+strings > stackLeafBytes {
		return streamedLeafDigest(n)
	}
	var arr [stackLeafBytes]byte
	buf := arr[:0]
	buf = prioBytes(buf, n.prio)
	buf = leafBytes(buf, n)
	return sha256.Sum256(buf)
}

// streamedLeafDigest is leafDigest over the same bytes, written to the
// hash piece by piece.
func streamedLeafDigest(n *Node) [sha256.Size]byte {
	h := sha256.New()
	var marker [1]byte
	if n.prio != nil {
		marker[0] = 1
	}
	h.Write(marker[:])
	if n.prio != nil {
		writeLeafBytes(h, n.prio)
	}
	writeLeafBytes(h, n)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// writeLeafBytes writes leafBytes(n) to h, a string's contents through a
// stack buffer.
func writeLeafBytes(h hash.Hash, n *Node) {
	var head [16]byte
	if n.kind != KindString {
		h.Write(leafBytes(head[:0], n))
		return
	}
	b := append(head[:0], byte(KindString))
	h.Write(binary.BigEndian.AppendUint64(b, uint64(len(n.s))))
	var chunk [4096]byte
	for s := n.s; len(s) > 0; {
		k := copy(chunk[:], s)
		h.Write(chunk[:k])
		s = s[k:]
	}
}
