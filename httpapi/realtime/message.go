package realtime

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/arbordb/arbor/fsm/tree"
)

// Every message is an envelope {"t": layer, "d": payload}: "c" for the
// connection's control messages, "d" for data. A client's data message is
// a request {"r": number, "a": action, "b": body}; the server answers
// {"r": number, "b": {"s": status, "d": data}} and pushes
// {"a": action, "b": body} without r.

// errBadMessage is a message that is not the protocol's.
var errBadMessage = errors.New("malformed message")

// message is one decoded client message.
type message struct {
	// control is the type of a control message ("p": ping); "" for data.
	control string
	// req is a data message's request.
	req request
}

// request is one client request.
type request struct {
	// id is the request number exactly as the client wrote it, echoed in
	// the answer; nil when the client asked for no answer.
	id     json.RawMessage
	action string
	body   json.RawMessage // an object, or nil
	// tooBig is a request whose message was over the size limit: only
	// its number is known, and it is answered too_big.
	tooBig bool
}

// envelope is a message's outer layer.
type envelope struct {
	T string          `json:"t"`
	D json.RawMessage `json:"d"`
}

// dataPayload is a data message's payload.
type dataPayload struct {
	R json.RawMessage `json:"r"`
	A string          `json:"a"`
	B json.RawMessage `json:"b"`
}

// controlPayload is a control message's payload.
type controlPayload struct {
	T string `json:"t"`
}

// decodeMessage reads one client message (the fuzz target's subject).
// Its errors wrap errBadMessage.
func decodeMessage(b []byte) (message, error) {
	if !utf8.Valid(b) {
		return message{}, fmt.Errorf("%w: not UTF-8", errBadMessage)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return message{}, fmt.Errorf("%w: %v", errBadMessage, err)
	}
	if !isObject(env.D) {
		return message{}, fmt.Errorf("%w: the payload is not an object", errBadMessage)
	}
	switch env.T {
	case "c":
		var c controlPayload
		if err := json.Unmarshal(env.D, &c); err != nil || c.T == "" {
			return message{}, fmt.Errorf("%w: control message without a type", errBadMessage)
		}
		return message{control: c.T}, nil
	case "d":
		var d dataPayload
		if err := json.Unmarshal(env.D, &d); err != nil {
			return message{}, fmt.Errorf("%w: %v", errBadMessage, err)
		}
		if d.A == "" {
			return message{}, fmt.Errorf("%w: request without an action", errBadMessage)
		}
		if d.R != nil && !isRequestNumber(d.R) {
			return message{}, fmt.Errorf("%w: request number %.20s", errBadMessage, d.R)
		}
		if isNull(d.R) {
			d.R = nil
		}
		if isNull(d.B) {
			d.B = nil
		} else if !isObject(d.B) {
			return message{}, fmt.Errorf("%w: the body of %q is not an object", errBadMessage, d.A)
		}
		return message{req: request{id: d.R, action: d.A, body: d.B}}, nil
	}
	return message{}, fmt.Errorf("%w: layer %q", errBadMessage, env.T)
}

// isObject reports whether raw JSON is an object.
func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// isNull reports whether raw JSON is absent or null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// isRequestNumber accepts a non-negative integer of at most 16 digits
// (the SDKs count from 0 or 1), or null.
func isRequestNumber(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "null" {
		return true
	}
	if len(raw) == 0 || len(raw) > 16 {
		return false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Outbound messages, rendered by appending to a buffer.

// appendResponse renders the answer to request id: status and data (raw
// JSON, or nil for none).
func appendResponse(b []byte, id json.RawMessage, status string, data []byte) []byte {
	b = append(b, `{"t":"d","d":{"r":`...)
	b = append(b, bytes.TrimSpace(id)...)
	b = append(b, `,"b":{"s":`...)
	b = appendString(b, status)
	b = append(b, `,"d":`...)
	if data == nil {
		data = []byte(`""`)
	}
	b = append(b, data...)
	return append(b, "}}}"...)
}

// appendPush renders a server push: action and body (raw JSON).
func appendPush(b []byte, action string, body []byte) []byte {
	b = appendPushHead(b, action)
	b = append(b, body...)
	return append(b, "}}"...)
}

// appendPushHead renders a push up to its body, which the caller appends
// and then closes with "}}".
func appendPushHead(b []byte, action string) []byte {
	b = append(b, `{"t":"d","d":{"a":`...)
	b = appendString(b, action)
	return append(b, `,"b":`...)
}

// appendControl renders a control message of type t with payload d (raw
// JSON).
func appendControl(b []byte, t string, d []byte) []byte {
	b = append(b, `{"t":"c","d":{"t":`...)
	b = appendString(b, t)
	b = append(b, `,"d":`...)
	b = append(b, d...)
	return append(b, "}}"...)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte { return tree.AppendQuoted(b, s) }
