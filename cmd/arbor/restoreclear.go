package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// clear deletes the whole database before a restore in pieces. A delete
// counts the bytes it removes against the write size limit, so a
// database larger than one write is deleted a few children at a time,
// deeper where a child alone is too large.
func (rs *restorer) clear(ctx context.Context) error {
	err := rs.send(ctx, http.MethodPut, "", strings.NewReader("null"), 4)
	if !hasStatus(err, http.StatusRequestEntityTooLarge) {
		return err
	}
	fmt.Fprintln(rs.out, "restore: the database is larger than one delete may remove; deleting it in parts")
	return rs.clearChildren(ctx, "")
}

// clearChildren deletes every child of field.
func (rs *restorer) clearChildren(ctx context.Context, field string) error {
	keys, err := rs.shallow(ctx, field)
	if err != nil {
		return err
	}
	if keys == nil {
		return fmt.Errorf("delete /%s: a single value %w", field, errTooLargeForOne)
	}
	for len(keys) > 0 {
		n := min(len(keys), restoreMaxFields)
		if err := rs.deleteKeys(ctx, field, keys[:n]); err != nil {
			return err
		}
		keys = keys[n:]
	}
	return nil
}

// deleteKeys deletes the children keys of field in one PATCH, or, when
// that removes too much at once, in halves, down to one child's own
// children.
func (rs *restorer) deleteKeys(ctx context.Context, field string, keys []string) error {
	body := map[string]any{}
	for _, k := range keys {
		body[k] = nil
	}
	b, _ := json.Marshal(body)
	err := rs.send(ctx, http.MethodPatch, field, bytes.NewReader(b), int64(len(b)))
	if !hasStatus(err, http.StatusRequestEntityTooLarge) {
		return err
	}
	if len(keys) == 1 {
		return rs.clearChildren(ctx, span{field: field}.child(keys[0], 0, 0).field)
	}
	if err := rs.deleteKeys(ctx, field, keys[:len(keys)/2]); err != nil {
		return err
	}
	return rs.deleteKeys(ctx, field, keys[len(keys)/2:])
}

// shallow lists the children of field, read as the answer streams in;
// nil when field holds a primitive (or nothing).
func (rs *restorer) shallow(ctx context.Context, field string) ([]string, error) {
	resp, err := rs.c.stream(ctx, http.MethodGet, restorePath(field)+"?shallow=true", nil, 0)
	if err != nil {
		return nil, fmt.Errorf("list /%s: %w", field, err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(bufio.NewReader(resp.Body))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("list /%s: %w", field, err)
	}
	if tok != json.Delim('{') {
		return nil, nil
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("list /%s: %w", field, err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("list /%s: %w", field, errors.New("a key was expected"))
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, fmt.Errorf("list /%s: %w", field, err)
		}
		keys = append(keys, key)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return keys, nil
}
