package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxHeaderBytes is what the request line and headers of one request may
// take (net/http's default, made explicit). HTTP/1 allows 4 KiB more
// (net/http's read buffer slop); HTTP/2 derives its
// SETTINGS_MAX_HEADER_LIST_SIZE from it (1 MiB + 320).
const maxHeaderBytes = 1 << 20

// http1Conn is an HTTP/1 connection after its TLS handshake (tlsListener).
// Not being a *tls.Conn, net/http serves HTTP/1 on it straight away, and
// its ConnectionState still gives every request its TLS state. Its Write
// turns the answers net/http writes by itself, in plain text, before any
// handler runs, into SPEC §6 JSON (jsonAnswer).
type http1Conn struct{ *tls.Conn }

// Write implements net.Conn.
func (c *http1Conn) Write(p []byte) (int, error) {
	a, ok := jsonAnswer(p, time.Now())
	if !ok {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(a); err != nil {
		return 0, err
	}
	return len(p), nil
}

// goErrorHeaders follows the status line of every error net/http writes
// itself when it cannot read a request (conn.serve in net/http/server.go):
// 431 for a head over MaxHeaderBytes, 400 for a malformed request, 501 for
// an unknown transfer coding, 505 for an unsupported HTTP version. Each is
// one Write of the whole answer, after which the connection is closed.
const goErrorHeaders = "Content-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// jsonAnswer returns the SPEC §6 JSON answer that replaces p when p is an
// answer net/http wrote by itself: an error after goErrorHeaders, or the
// bodiless 417 it sends for an Expect other than 100-continue. The API
// never answers 417, and its bodies are JSON, which has no raw CR or LF,
// so no write of a handler's answer looks like either.
func jsonAnswer(p []byte, now time.Time) ([]byte, bool) {
	if !bytes.HasPrefix(p, []byte("HTTP/1.")) {
		return nil, false
	}
	line, rest, ok := bytes.Cut(p, []byte("\r\n"))
	if !ok || len(line) < len("HTTP/1.1 400") || line[len("HTTP/1.1")] != ' ' {
		return nil, false
	}
	code, err := strconv.Atoi(string(line[len("HTTP/1.1 ") : len("HTTP/1.1 ")+3]))
	if err != nil {
		return nil, false
	}
	reason := string(line[len("HTTP/1.1 ")+3:])
	switch {
	case code == http.StatusExpectationFailed && bytes.HasSuffix(rest, []byte("\r\n\r\n")) &&
		bytes.Contains(rest, []byte("Content-Length: 0\r\n")):
		return renderAnswer(code, msgExpectation, now), true
	case code >= 400 && bytes.HasPrefix(rest, []byte(goErrorHeaders)):
		_, detail, _ := strings.Cut(reason, ": ") // "400 Bad Request: malformed Host header"
		return renderAnswer(code, goErrorMessage(code, detail), now), true
	}
	return nil, false
}

// Messages of the answers net/http would write itself.
const (
	msgHeadersTooLarge = "Request header fields too large"
	msgMalformed       = "Bad request: malformed HTTP request"
	msgTransferCoding  = "Unsupported transfer encoding"
	msgHTTPVersion     = "HTTP version not supported"
	msgExpectation     = "Expectation failed: only Expect: 100-continue is supported"
)

// goErrorMessage is the message of net/http's error code, with the detail
// it gave after the status text, if any.
func goErrorMessage(code int, detail string) string {
	switch code {
	case http.StatusRequestHeaderFieldsTooLarge:
		return msgHeadersTooLarge
	case http.StatusBadRequest:
		if detail != "" {
			return "Bad request: " + detail // e.g. malformed Host header, invalid header name
		}
		return msgMalformed
	case http.StatusNotImplemented:
		return msgTransferCoding
	case http.StatusHTTPVersionNotSupported:
		return msgHTTPVersion
	}
	if detail != "" {
		return http.StatusText(code) + ": " + detail
	}
	return http.StatusText(code)
}

// renderAnswer is a whole HTTP/1.1 answer with the API's headers (SPEC §7)
// and body (SPEC §6), closing the connection as net/http does.
func renderAnswer(code int, msg string, now time.Time) []byte {
	body := errorJSON(msg)
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(code) + " " + http.StatusText(code) + "\r\n")
	for _, h := range apiAnswerHeaders {
		b.WriteString(http.CanonicalHeaderKey(h[0]) + ": " + h[1] + "\r\n")
	}
	b.WriteString("Connection: close\r\n")
	b.WriteString("Date: " + now.UTC().Format(http.TimeFormat) + "\r\n")
	b.WriteString("Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n")
	b.Write(body)
	return b.Bytes()
}

// apiAnswerHeaders are the headers of the API's error answers (SPEC §7)
// that do not depend on the answer, as HTTP/2 writes their names.
var apiAnswerHeaders = [][2]string{
	{"access-control-allow-origin", "*"},
	{"cache-control", "no-cache"},
	{"content-type", "application/json; charset=utf-8"},
}

// errorJSON is SPEC §6's error body, {\n  "error" : "<msg>"\n}\n, as the
// API renders it (httpapi.errorBody).
func errorJSON(msg string) []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"error\" : ")
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(msg) // a string always encodes; Encode adds "\n"
	b.Truncate(b.Len() - 1)
	b.WriteString("\n}\n")
	return b.Bytes()
}
