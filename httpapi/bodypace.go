package httpapi

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// A request body must keep moving: at most bodyIdle between two reads
// that return data, and after bodyGrace at least bodyMinRate on average.
// Go's server bounds only the headers; without this an authenticated
// client could hold a connection (and its buffer) for as long as it
// liked by sending a body a byte a minute.
const (
	bodyIdle    = 10 * time.Second
	bodyGrace   = 10 * time.Second
	bodyMinRate = 16 << 10 // bytes per second
)

// errSlowBody is a request body that broke the pace rules (408).
var errSlowBody = errors.New("request body too slow")

// msgSlowBody is errSlowBody's text for the client.
const msgSlowBody = "Request body too slow: send at least 16 KiB/s, pausing at most 10 s"

// bodyReader enforces the pace rules on r with read deadlines on the
// connection (HTTP/1 and HTTP/2 alike).
type bodyReader struct {
	r     io.Reader
	rc    *http.ResponseController
	now   func() time.Time
	start time.Time
	n     int64
}

func newBodyReader(w http.ResponseWriter, r io.Reader, now func() time.Time) *bodyReader {
	return &bodyReader{r: r, rc: http.NewResponseController(w), now: now, start: now()}
}

// Read implements io.Reader.
func (b *bodyReader) Read(p []byte) (int, error) {
	now := b.now()
	if el := now.Sub(b.start); el > bodyGrace && float64(b.n) < el.Seconds()*bodyMinRate {
		return 0, errSlowBody
	}
	// Not supported (a test recorder): the pace is then checked between
	// reads only.
	_ = b.rc.SetReadDeadline(now.Add(bodyIdle))
	n, err := b.r.Read(p)
	b.n += int64(n)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, errSlowBody
	}
	return n, err
}

// done lifts the deadline once the body has been read: the connection's
// own timeouts apply again (Go's server watches it for the client going
// away while the handler runs).
func (b *bodyReader) done() { _ = b.rc.SetReadDeadline(time.Time{}) }
