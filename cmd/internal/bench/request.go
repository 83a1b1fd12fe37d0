package bench

import (
	"encoding/base64"
	"net/http"
	"strconv"
)

// benchRequest is one HTTP request as a client sends it; the client adds
// the scheme and the node's address.
type benchRequest struct {
	method string
	path   string // path and query
	body   []byte // nil for none
}

// requestBuilder turns operations into a target's requests. Builders are
// immutable and shared by all clients. Every call returns a fresh body:
// the transport may still hold the previous one when Do returns.
type requestBuilder interface {
	build(op operation, client int) benchRequest
	// authorization is the Authorization header value for a token.
	authorization(token string) string
}

// benchPrefix is the parent of every key the bench writes, on both
// targets, so a run never touches other data.
const benchPrefix = "bench"

// arborBuilder speaks the Firebase REST API of SPEC §2 (also used for the
// bare handler, so the ceiling is measured with the very same requests).
type arborBuilder struct {
	valueJSON []byte // the value as a JSON string
}

func newArborBuilder(value string) arborBuilder {
	return arborBuilder{valueJSON: strconv.AppendQuote(nil, value)}
}

func (b arborBuilder) authorization(token string) string { return "Bearer " + token }

func (b arborBuilder) build(op operation, client int) benchRequest {
	switch op.kind {
	case opWrite:
		return benchRequest{http.MethodPut, arborKeyPath(op.keys[0], ""), b.body()}
	case opReadLocal:
		return benchRequest{http.MethodGet, arborKeyPath(op.keys[0], "?consistency=local"), nil}
	case opReadLinear:
		// Explicit rather than the default, which an operator may change.
		return benchRequest{http.MethodGet, arborKeyPath(op.keys[0], "?consistency=linearizable"), nil}
	case opPush:
		return benchRequest{http.MethodPost, "/" + benchPrefix + "/pushes.json", b.body()}
	case opPatchMulti:
		// One PATCH of `fields` sibling keys: a single atomic log entry.
		body := make([]byte, 0, len(op.keys)*(len(b.valueJSON)+12)+2)
		body = append(body, '{')
		for i, k := range op.keys {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, `"k`...)
			body = strconv.AppendInt(body, int64(k), 10)
			body = append(body, `":`...)
			body = append(body, b.valueJSON...)
		}
		body = append(body, '}')
		return benchRequest{http.MethodPatch, "/" + benchPrefix + ".json", body}
	}
	panic("bench: unknown operation " + op.kind.String())
}

// body copies the value, see requestBuilder.
func (b arborBuilder) body() []byte { return append([]byte(nil), b.valueJSON...) }

// arborKeyPath is the REST path of key k under benchPrefix.
func arborKeyPath(k int, query string) string {
	return "/" + benchPrefix + "/k" + strconv.Itoa(k) + ".json" + query
}

// etcdBuilder speaks etcd's v3 JSON gateway (grpc-gateway): POST with a
// JSON body, keys and values base64-encoded. The closest equivalents of
// the Arbor operations: a put; a range that is serializable (local) or not
// (linearizable, through etcd's ReadIndex); a put on a fresh key for a
// push; a transaction of puts for a multi-key PATCH.
type etcdBuilder struct {
	value64 string // the value, base64
}

func newEtcdBuilder(value string) etcdBuilder {
	return etcdBuilder{value64: base64.StdEncoding.EncodeToString([]byte(value))}
}

// etcd's gateway takes the token from /v3/auth/authenticate bare.
func (b etcdBuilder) authorization(token string) string { return token }

func (b etcdBuilder) build(op operation, client int) benchRequest {
	switch op.kind {
	case opWrite:
		return benchRequest{http.MethodPost, "/v3/kv/put", b.put(nil, etcdKey(op.keys[0]))}
	case opReadLocal:
		return benchRequest{http.MethodPost, "/v3/kv/range", b.rangeBody(op.keys[0], true)}
	case opReadLinear:
		return benchRequest{http.MethodPost, "/v3/kv/range", b.rangeBody(op.keys[0], false)}
	case opPush:
		key := benchPrefix + "/pushes/c" + strconv.Itoa(client) + "-" + strconv.FormatUint(op.seq, 10)
		return benchRequest{http.MethodPost, "/v3/kv/put", b.put(nil, key)}
	case opPatchMulti:
		body := []byte(`{"success":[`)
		for i, k := range op.keys {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, `{"requestPut":`...)
			body = b.put(body, etcdKey(k))
			body = append(body, '}')
		}
		body = append(body, "]}"...)
		return benchRequest{http.MethodPost, "/v3/kv/txn", body}
	}
	panic("bench: unknown operation " + op.kind.String())
}

// put appends a PutRequest for key to dst.
func (b etcdBuilder) put(dst []byte, key string) []byte {
	dst = append(dst, `{"key":"`...)
	dst = base64.StdEncoding.AppendEncode(dst, []byte(key))
	dst = append(dst, `","value":"`...)
	dst = append(dst, b.value64...)
	return append(dst, `"}`...)
}

// rangeBody is a RangeRequest for one key.
func (b etcdBuilder) rangeBody(k int, serializable bool) []byte {
	body := append([]byte(`{"key":"`), base64.StdEncoding.EncodeToString([]byte(etcdKey(k)))...)
	if serializable {
		return append(body, `","serializable":true}`...)
	}
	return append(body, `"}`...)
}

// etcdKey names key k like arborKeyPath does: bench/k<k>.
func etcdKey(k int) string { return benchPrefix + "/k" + strconv.Itoa(k) }
