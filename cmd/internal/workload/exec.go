package workload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/arbordb/arbor/cmd/internal/client"
	"github.com/arbordb/arbor/cmd/internal/history"
)

// Exec performs single operations for one client id and records each
// with its times, whatever its outcome.
type Exec struct {
	Client   *client.Client
	Recorder *history.Recorder
	ID       int // the client id in the history
	// Final marks every operation as part of the quiescence phase.
	Final bool
	// Last is the outcome of the last operation.
	Last history.Outcome
}

// ctxNoCancel: a request in flight when the run ends is allowed to
// finish (bounded by the client timeout), so the end of the run does not
// manufacture indeterminate operations.
func ctxNoCancel(ctx context.Context) context.Context {
	return context.WithoutCancel(ctx)
}

func (e *Exec) base(node, key string, kind history.Kind, typ history.Type) history.Op {
	return history.Op{Client: e.ID, Node: node, Key: key, Kind: kind, Type: typ, Final: e.Final}
}

func (e *Exec) do(ctx context.Context, op *history.Op, method, path, body string, headers ...string) client.Response {
	op.Call = e.Recorder.Now()
	resp, err := e.Client.Do(ctxNoCancel(ctx), op.Node, method, path, body, headers...)
	op.Return = e.Recorder.Now()
	op.Status = resp.Status
	classify(op, resp, err)
	e.Last = op.Outcome
	return resp
}

// classify sets the outcome from the answer. Only a refused connection
// proves a request was not executed; a 503 may come from a write that
// timed out waiting for a commit that happens later.
func classify(op *history.Op, resp client.Response, err error) {
	switch {
	case err != nil:
		op.Error = err.Error()
		if client.NotSent(err) {
			op.Outcome = history.Fail
		} else {
			op.Outcome = history.Unknown
		}
	case resp.Status == 200:
		op.Outcome = history.OK
	case resp.Status == 412 && op.Type == history.CAS:
		op.Outcome = history.Rejected
	case resp.Status == 503 || resp.Status >= 500:
		op.Outcome = history.Unknown
		op.Error = errorText(resp.Body)
	default:
		// A 4xx the workload never provokes: nothing was written, but
		// the checks report it as an unexpected answer.
		op.Outcome = history.Fail
		op.Error = errorText(resp.Body)
	}
}

func errorText(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return string(bytes.TrimSpace(body))
}

func path(key string) string { return "/" + key + ".json" }

// Read reads key. local asks for consistency=local; judged says whether
// the read is part of the linearizability check anyway (the stale-read
// self-test sets it to show the checker catches stale reads).
func (e *Exec) Read(ctx context.Context, node, key string, kind history.Kind, local, judged bool) history.Op {
	op := e.base(node, key, kind, history.Read)
	op.Local = local && !judged
	p := path(key)
	if local {
		p += "?consistency=local"
	}
	resp := e.do(ctx, &op, "GET", p, "", "X-Firebase-ETag", "true")
	if op.Outcome == history.OK {
		op.ETag = resp.Header.Get("ETag")
		parseValue(&op, resp.Body)
	}
	e.Recorder.Add(op)
	return op
}

// parseValue fills the outputs of a successful read (or a 412, or an
// increment's answer) from the body.
func parseValue(op *history.Op, body []byte) {
	b := bytes.TrimSpace(body)
	op.Out = string(b)
	switch op.Kind {
	case history.Counter:
		if op.Out == history.Null {
			op.OutNum = 0
			return
		}
		n, err := strconv.ParseInt(op.Out, 10, 64)
		if err != nil {
			op.Error = "unexpected body: not an integer"
			return
		}
		op.OutNum = n
	case history.List:
		items, err := decodeList(b)
		if err != nil {
			op.Error = "unexpected body: " + err.Error()
			return
		}
		op.Items = items
		op.Out = "" // the items say it, the raw text would bloat the history
	case history.Register:
		if op.Out != history.Null {
			var s string
			if json.Unmarshal(b, &s) != nil {
				op.Error = "unexpected body: not a string or null"
			}
		}
	}
}

// decodeList reads a JSON object of push key → string in the order the
// node sent it (key order), or null as the empty list.
func decodeList(b []byte) ([]history.Item, error) {
	if string(b) == history.Null {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not an object")
	}
	var items []history.Item
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := tok.(string)
		var v string
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("child %s: %w", name, err)
		}
		items = append(items, history.Item{Name: name, Value: v})
	}
	return items, nil
}

// Write puts the JSON text value (a unique string) at key.
func (e *Exec) Write(ctx context.Context, node, key, value string) history.Op {
	op := e.base(node, key, history.Register, history.Write)
	op.Value = value
	e.do(ctx, &op, "PUT", path(key), value)
	e.Recorder.Add(op)
	return op
}

// Patch writes the JSON text value at key with a PATCH of key's parent
// ({"<last segment>": value}): an update entry rather than a set.
func (e *Exec) Patch(ctx context.Context, node, key, value string) history.Op {
	op := e.base(node, key, history.Register, history.Write)
	op.Value, op.Patch = value, true
	parent, leaf := key, key
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		parent, leaf = key[:i], key[i+1:]
	}
	e.do(ctx, &op, "PATCH", path(parent), "{"+strconv.Quote(leaf)+":"+value+"}")
	e.Recorder.Add(op)
	return op
}

// Delete removes key.
func (e *Exec) Delete(ctx context.Context, node, key string) history.Op {
	op := e.base(node, key, history.Register, history.Delete)
	op.Value = history.Null
	e.do(ctx, &op, "DELETE", path(key), "")
	e.Recorder.Add(op)
	return op
}

// CAS puts value at key if the key's ETag is still etag, the ETag a read
// returned with expect.
func (e *Exec) CAS(ctx context.Context, node, key, expect, etag, value string) history.Op {
	op := e.base(node, key, history.Register, history.CAS)
	op.Expect, op.Value = expect, value
	resp := e.do(ctx, &op, "PUT", path(key), value, "if-match", etag, "X-Firebase-ETag", "true")
	if op.Outcome == history.Rejected {
		op.ETag = resp.Header.Get("ETag")
		parseValue(&op, resp.Body)
	}
	e.Recorder.Add(op)
	return op
}

// Incr adds delta to the counter at key with the increment server value.
func (e *Exec) Incr(ctx context.Context, node, key string, delta int64) history.Op {
	op := e.base(node, key, history.Counter, history.Incr)
	op.Delta = delta
	resp := e.do(ctx, &op, "PUT", path(key), fmt.Sprintf(`{".sv":{"increment":%d}}`, delta))
	if op.Outcome == history.OK {
		parseValue(&op, resp.Body)
	}
	e.Recorder.Add(op)
	return op
}

// Append POSTs the string value under key.
func (e *Exec) Append(ctx context.Context, node, key, value string) history.Op {
	op := e.base(node, key, history.List, history.Append)
	op.Value = value
	resp := e.do(ctx, &op, "POST", path(key), strconv.Quote(value))
	if op.Outcome == history.OK {
		var r struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(resp.Body, &r); err != nil || r.Name == "" {
			op.Error = "unexpected body: no push key name"
		}
		op.Name = r.Name
	}
	e.Recorder.Add(op)
	return op
}
