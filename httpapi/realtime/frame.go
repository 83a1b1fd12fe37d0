package realtime

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Framing: a message longer than one frame travels as a count frame (the
// number of frames, at most six digits) and then that many frames, whose
// text put together is the message; any other frame is a whole message.
// The client sends "0" alone as a keep-alive. Both directions frame
// alike; the server never sends "0", which a client would take for a
// count.

// maxFrameBytes is the most one frame carries: the SDKs split their
// messages into 16,384 characters, and a frame this server sends is at
// most as many bytes (so never more characters).
const maxFrameBytes = 16384

// maxCountDigits is the longest count frame the SDKs accept.
const maxCountDigits = 6

var (
	// errTooBig is a message over Config.MaxMessageBytes.
	errTooBig = errors.New("message too big")
)

// assembler puts a client's frames back together into messages.
type assembler struct {
	limit   int64  // Config.MaxMessageBytes
	want    int    // frames still expected for the message being read
	partial []byte // what came of it so far (its head only, when skipping)
	// skipping is set while a message over the limit is read to its end
	// and dropped (oversized.go); skipped counts its bytes.
	skipping bool
	skipped  int64
}

// add takes one frame. It returns a whole message when one is complete,
// nil for a keep-alive, a count frame or a part, an *oversizedError when
// the last frame of a message over the limit came, and an error wrapping
// errTooBig when the framing cannot go on.
func (a *assembler) add(f []byte) ([]byte, error) {
	if a.want > 0 {
		if !a.skipping && int64(len(a.partial))+int64(len(f)) > a.limit {
			keep := int(min(headBytes, a.limit))
			a.skipping, a.skipped = true, int64(len(a.partial))
			head := append(a.partial, f[:min(len(f), keep)]...)
			a.partial = append([]byte(nil), head[:min(len(head), keep)]...)
		}
		if a.skipping {
			if a.skipped += int64(len(f)); a.skipped > skipFactor*a.limit {
				return nil, fmt.Errorf("%w: over %d bytes", errTooBig, a.limit)
			}
		} else {
			a.partial = append(a.partial, f...)
		}
		if a.want--; a.want > 0 {
			return nil, nil
		}
		msg := a.partial
		a.partial = nil
		if a.skipping {
			a.skipping, a.skipped = false, 0
			return nil, &oversizedError{head: msg, limit: a.limit}
		}
		return msg, nil
	}
	if n, ok := frameCount(f); ok {
		if n == 0 {
			return nil, nil // keep-alive
		}
		// A client's frames are full but for the last, so n frames carry
		// more than n-1 of them: past what an oversized message may run
		// to, the count alone is enough to cut the client off.
		if int64(n-1)*maxFrameBytes > skipFactor*a.limit {
			return nil, fmt.Errorf("%w: %d frames announced, over %d bytes", errTooBig, n, a.limit)
		}
		a.want = n
		return nil, nil
	}
	if int64(len(f)) > a.limit {
		return nil, fmt.Errorf("%w: over %d bytes", errTooBig, a.limit)
	}
	return f, nil
}

// frameCount reads a count frame: one to six ASCII digits.
func frameCount(f []byte) (int, bool) {
	if len(f) == 0 || len(f) > maxCountDigits {
		return 0, false
	}
	n := 0
	for _, c := range f {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// splitFrames returns the frames that carry msg: msg itself when it fits
// in one, else a count frame and pieces of at most maxFrameBytes, cut on
// character boundaries (each frame is text on its own).
func splitFrames(msg []byte) [][]byte {
	if len(msg) <= maxFrameBytes {
		return [][]byte{msg}
	}
	frames := [][]byte{nil}
	for len(msg) > 0 {
		n := min(len(msg), maxFrameBytes)
		for n < len(msg) && n > 0 && !utf8.RuneStart(msg[n]) {
			n--
		}
		frames = append(frames, msg[:n])
		msg = msg[n:]
	}
	frames[0] = fmt.Appendf(nil, "%d", len(frames)-1)
	return frames
}
