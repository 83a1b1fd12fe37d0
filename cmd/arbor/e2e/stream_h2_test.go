package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestHTTP2StreamStaysOpenWhileIdle: an event stream over HTTP/2 that
// carries nothing for longer than a write's deadline (10 s) stays open,
// and the next change still reaches it. Every write arms a deadline; one
// left armed once the write is done would reset the stream when it
// passes, which HTTP/2 does even with nothing being written.
func TestHTTP2StreamStaysOpenWhileIdle(t *testing.T) {
	n := StartReadyNode(t, Options{Args: []string{"--stream-keepalive", "30s"}})
	client := streamClient(t, n, protoH2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body, r, err := openStream(ctx, client, n, "/idle-h2.json")
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data:") {
		t.Fatalf("the initial put's data line: %q %v", line, err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				lines <- "error: " + err.Error()
				return
			}
			lines <- strings.TrimRight(line, "\n")
		}
	}()
	quiet := time.After(12 * time.Second)
	for waiting := true; waiting; {
		select {
		case line := <-lines:
			if strings.HasPrefix(line, "error: ") {
				t.Fatalf("the idle stream ended: %s", line)
			}
		case <-quiet:
			waiting = false
		}
	}
	n.Do(t, "PUT", "/idle-h2.json", `"after"`)
	deadline := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok || strings.HasPrefix(line, "error: ") {
				t.Fatalf("the stream ended before the write reached it: %s", line)
			}
			if strings.Contains(line, `"after"`) {
				return
			}
		case <-deadline:
			t.Fatal("the write did not reach the stream within 30 s")
		}
	}
}
