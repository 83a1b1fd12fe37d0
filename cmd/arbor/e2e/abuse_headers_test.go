//go:build abuse

package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// probeHeadersTooLarge: 20 clients at once send heads of 2 MiB (twice
// the limit) over HTTP/1.1 to a follower; each gets SPEC §6's JSON 431, not the plain
// text net/http writes by itself, and the cluster does not notice.
func probeHeadersTooLarge(t *testing.T, c *Cluster) {
	_, target, term := settled(t, c)
	k := startCanary(t, c)
	k.waitStarted(t)
	req := "GET /sentinel.json HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + AdminSecret +
		"\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n"
	want := errorBody("Request header fields too large")
	wrong := atOnce(20, func(int) *tls.Conn { return dialHTTP1(t, target) }, func(_ int, cn *tls.Conn) string {
		status, ctype, body := rawHTTP1Large(cn, req)
		if status != 431 || ctype != "application/json; charset=utf-8" || body != want {
			return fmt.Sprintf("%d %q %q", status, ctype, body)
		}
		return ""
	})
	k.finish(t, "20 heads of 2 MiB")
	if len(wrong) > 0 {
		t.Errorf("heads of 2 MiB answered %d times otherwise than the JSON 431: %v", len(wrong), wrong)
	}
	healthy(t, c, "heads of 2 MiB", term)
}

// atOnce opens n connections with dial, then runs check on each at once,
// and returns what the checks found wrong (their non-empty results).
func atOnce(n int, dial func(i int) *tls.Conn, check func(i int, cn *tls.Conn) string) []string {
	conns := make([]*tls.Conn, n)
	for i := range conns {
		conns[i] = dial(i)
	}
	found := make([]string, n)
	var wg sync.WaitGroup
	for i, cn := range conns {
		wg.Go(func() { found[i] = check(i, cn) })
	}
	wg.Wait()
	var wrong []string
	for _, f := range found {
		if f != "" {
			wrong = append(wrong, f)
		}
	}
	return wrong
}

// rawHTTP1Large sends req over cn, an HTTP/1.1 connection, while reading
// the answer (the node answers and hangs up before a large head is all
// sent) and returns its status, Content-Type and body; status is 0 when
// no answer came within 10 s.
func rawHTTP1Large(cn *tls.Conn, req string) (status int, ctype, body string) {
	defer cn.Close()
	_ = cn.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(cn, req) }() // fails once the node hangs up: expected
	resp, err := http.ReadResponse(bufio.NewReader(cn), nil)
	if err != nil {
		return 0, "", err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// probeHTTP2Heads: 20 clients at once send, over HTTP/2 to a follower,
// header blocks that net/http's HTTP/2 server answers itself, in HTML or
// plain text: fields passing the advertised 1 MiB + 320 in the last frame
// of the block, or a connection-specific header. Each is refused (431 or
// 400), and the cluster does not notice.
func probeHTTP2Heads(t *testing.T, c *Cluster) {
	_, target, term := settled(t, c)
	k := startCanary(t, c)
	k.waitStarted(t)
	quarter := strings.Repeat("a", 300_000)
	large := [][2]string{{"x-a", quarter}, {"x-b", quarter}, {"x-c", quarter}, {"x-d", quarter}}
	wrong := atOnce(20, func(int) *tls.Conn { return dialProto(t, target, "h2") }, func(i int, cn *tls.Conn) string {
		fields, wantStatus := large, "431"
		if i%2 == 1 {
			fields, wantStatus = [][2]string{{"connection", "close"}}, "400"
		}
		status, ctype, body := rawHTTP2(cn, fields)
		if status != wantStatus {
			return fmt.Sprintf("%s %q %q", status, ctype, body)
		}
		return ""
	})
	k.finish(t, "20 HTTP/2 heads refused")
	if len(wrong) > 0 {
		t.Errorf("HTTP/2 heads answered %d times otherwise than refused: %v", len(wrong), wrong)
	}
	healthy(t, c, "HTTP/2 heads refused", term)
}

// rawHTTP2 sends one authenticated GET with the extra header fields over
// cn, an HTTP/2 connection, as literals in 16 KiB frames, while reading,
// and returns the answer's status, Content-Type and body ("" when none
// came within 10 s).
func rawHTTP2(cn *tls.Conn, fields [][2]string) (status, ctype, body string) {
	defer cn.Close()
	_ = cn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(cn, http2.ClientPreface); err != nil {
		return "", "", err.Error()
	}
	fr := http2.NewFramer(cn, cn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	head := [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "127.0.0.1"}, {":path", "/sentinel.json"}, {"authorization", "Bearer " + AdminSecret}}
	for _, f := range append(head, fields...) {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	go func() { // the node may answer before the last frame
		if fr.WriteSettings() != nil {
			return
		}
		b := block.Bytes()
		n := min(len(b), 16384)
		err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:n], EndStream: true, EndHeaders: n == len(b)})
		for b = b[n:]; err == nil && len(b) > 0; b = b[n:] {
			n = min(len(b), 16384)
			err = fr.WriteContinuation(1, n == len(b), b[:n])
		}
	}()
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return status, ctype, body
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			status = f.PseudoValue("status")
			for _, hf := range f.RegularFields() {
				if hf.Name == "content-type" {
					ctype = hf.Value
				}
			}
		case *http2.DataFrame:
			body += string(f.Data())
			if f.StreamEnded() {
				return status, ctype, body
			}
		}
	}
}
