//go:build abuse

package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
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
	var wg sync.WaitGroup
	var mu sync.Mutex
	var wrong []string
	for range 20 {
		cn := dialHTTP1(t, target)
		wg.Go(func() {
			status, ctype, body := rawHTTP1Large(cn, req)
			if status != 431 || ctype != "application/json; charset=utf-8" || body != want {
				mu.Lock()
				wrong = append(wrong, fmt.Sprintf("%d %q %q", status, ctype, body))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	k.finish(t, "20 heads of 2 MiB", canaryP99, canaryWorst)
	if len(wrong) > 0 {
		t.Errorf("heads of 2 MiB answered %d times otherwise than the JSON 431: %v", len(wrong), wrong)
	}
	healthy(t, c, "heads of 2 MiB", term)
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
