package realtime

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// A message over Config.MaxMessageBytes that comes in frames is read to
// its end and dropped, and its request is answered too_big: closing the
// connection instead would not fail the write in the SDK, which sends its
// outstanding writes again on every reconnect (the official JS SDK did so
// every 1.5 s, 18 MB each time, and its set() never settled). Only the
// message's head is kept, for its request number. A client that keeps a
// message going past skipFactor times the limit, or whose head shows no
// request number, is cut off as before.

// headBytes is how much of an oversized message is kept.
const headBytes = 256

// skipFactor bounds the bytes of one oversized message read and dropped.
const skipFactor = 4

// oversizedError is a framed message over the limit, read to its end.
type oversizedError struct {
	head  []byte // its first headBytes bytes
	limit int64
}

func (e *oversizedError) Error() string {
	return fmt.Sprintf("%v: over %d bytes", errTooBig, e.limit)
}

func (e *oversizedError) Unwrap() error { return errTooBig }

// requestNumber finds the request number in an oversized message's head:
// the first "r" key of its payload, taken only when it comes before the
// body ("b"), which could hold any text. The SDKs write {"t":"d","d":{"r":…
func requestNumber(head []byte) (json.RawMessage, bool) {
	d := bytes.Index(head, []byte(`"d":{`))
	if d < 0 {
		return nil, false
	}
	rest := head[d+len(`"d":{`):]
	r := bytes.Index(rest, []byte(`"r":`))
	if r < 0 {
		return nil, false
	}
	if b := bytes.Index(rest, []byte(`"b":`)); b >= 0 && b < r {
		return nil, false
	}
	num := bytes.TrimLeft(rest[r+len(`"r":`):], " ")
	n := 0
	for n < len(num) && n < 16 && num[n] >= '0' && num[n] <= '9' {
		n++
	}
	if n == 0 || n == len(num) {
		return nil, false // no digits, or the head ends inside the number
	}
	return json.RawMessage(append([]byte(nil), num[:n]...)), true
}
