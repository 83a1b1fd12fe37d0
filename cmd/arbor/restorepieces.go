package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

const (
	// restorePieceDefault (--piece-size) is the largest piece a split restore sends until
	// the node refuses one as too large: well under the node's largest
	// write, small enough to replicate without holding other writes up.
	restorePieceDefault = 8 << 20
	// restorePieceMin is where halving the piece stops: a node that
	// refuses this much is refusing for another reason.
	restorePieceMin = 4 << 10
	// restoreMaxFields caps the fields of one PATCH: each is merged on
	// its own, so a piece of many tiny children costs more than its bytes.
	restoreMaxFields = 10000
	// restoreAttempts is how often a write is sent when the node cannot
	// say whether it was applied (503, connection lost). Every write of a
	// restore sets fixed values at fixed paths: sending it again is safe.
	restoreAttempts = 5
)

// errTooLargeForOne says a value of the backup cannot be split and is
// larger than the node takes in one write.
var errTooLargeForOne = errors.New("larger than the node accepts in one write, and not an object that could be split")

// restorer writes a backup into a node, in one write or in pieces.
type restorer struct {
	c     *adminClient
	limit string // ?writeSizeLimit=, "" for the node's default
	r     io.ReaderAt
	total int64 // the file's size, for the progress
	out   io.Writer
	// budget is the largest PATCH body sent; halved each time the node
	// refuses a piece as too large (413, nothing written).
	budget int64
	// backoff is the first wait before a write is sent again.
	backoff time.Duration

	buf    bytes.Buffer // the piece being built: {"field":value,...
	batch  []span       // its values, to split again if it is refused
	later  []span       // priorities of split nodes, set once their children exist
	pieces int
	done   int64 // bytes of the backup's values written
	shown  time.Time
}

// outcomeOpen reports whether err leaves open whether the write was
// applied: a 503 or a connection lost while the write was sent or
// answered (a connection refused, a certificate not trusted wrote
// nothing, and retrying them only delays the error).
func outcomeOpen(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.code == http.StatusServiceUnavailable
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// restorePath is the request path of field ("" is the root), before its query.
func restorePath(field string) string {
	var b strings.Builder
	for _, k := range strings.Split(field, "/") {
		if k != "" {
			b.WriteByte('/')
			b.WriteString(url.PathEscape(k))
		}
	}
	return b.String() + "/.json"
}

// writeURL is the request URI of a write at field.
func (rs *restorer) writeURL(field string) string {
	u := restorePath(field) + "?print=silent"
	if rs.limit != "" {
		u += "&writeSizeLimit=" + url.QueryEscape(rs.limit)
	}
	return u
}

// send writes body at field, again after an answer that leaves the
// outcome open (503, a lost connection), at most restoreAttempts times.
// A 413 is returned at once: the node refused it before writing anything.
func (rs *restorer) send(ctx context.Context, method, field string, body io.ReadSeeker, size int64) error {
	wait := rs.backoff
	for attempt := 1; ; attempt++ {
		if _, err := body.Seek(0, io.SeekStart); err != nil {
			return err
		}
		resp, err := rs.c.stream(ctx, method, rs.writeURL(field), body, size)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}
		err = fmt.Errorf("%s /%s: %w", method, field, err)
		if attempt == restoreAttempts || ctx.Err() != nil || !outcomeOpen(err) {
			return err
		}
		fmt.Fprintf(rs.out, "restore: %v; sending it again in %s\n", err, wait)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return err
		}
		wait *= 2
	}
}

// inPieces writes the backup's value root, an object, as PATCHes of the
// root of at most rs.budget bytes each; the database must be empty. A
// value larger than a piece is split into its children, as deep as
// needed; the priorities of split nodes are set last.
func (rs *restorer) inPieces(ctx context.Context, root span) error {
	if err := rs.add(ctx, root); err != nil {
		return err
	}
	if err := rs.flush(ctx); err != nil {
		return err
	}
	later := rs.later
	rs.later = nil
	for _, p := range later {
		if err := rs.add(ctx, p); err != nil {
			return err
		}
	}
	if err := rs.flush(ctx); err != nil {
		return err
	}
	rs.done = rs.total // the keys and white space between the values, too
	rs.show(true)
	return nil
}

// fieldCost is what sp adds to a piece: "field":value and a separator.
func fieldCost(sp span) int64 {
	return int64(len(sp.field)) + 4 + sp.size()
}

// add puts sp into the piece being built, sending that piece first when
// sp would not fit; a value too large for a piece of its own is split.
func (rs *restorer) add(ctx context.Context, sp span) error {
	if sp.field != "" && fieldCost(sp)+2 <= rs.budget {
		if len(rs.batch) > 0 && (int64(rs.buf.Len())+fieldCost(sp)+1 > rs.budget || len(rs.batch) >= restoreMaxFields) {
			if err := rs.flush(ctx); err != nil {
				return err
			}
		}
		return rs.append(sp)
	}
	b, err := firstByte(rs.r, sp)
	if err != nil {
		return err
	}
	if b != '{' {
		return fmt.Errorf("the value at /%s (%s): %w", sp.field, humanBytes(sp.size()), errTooLargeForOne)
	}
	return members(rs.r, sp, func(key string, child span) error {
		switch key {
		case ".priority":
			rs.later = append(rs.later, child)
			return nil
		case ".value":
			return fmt.Errorf("the value at /%s (%s): %w", sp.field, humanBytes(sp.size()), errTooLargeForOne)
		}
		return rs.add(ctx, child)
	})
}

// append adds sp to the piece being built.
func (rs *restorer) append(sp span) error {
	if len(rs.batch) == 0 {
		rs.buf.Reset()
		rs.buf.WriteByte('{')
	} else {
		rs.buf.WriteByte(',')
	}
	field, _ := json.Marshal(sp.field)
	rs.buf.Write(field)
	rs.buf.WriteByte(':')
	if _, err := io.Copy(&rs.buf, io.NewSectionReader(rs.r, sp.start, sp.size())); err != nil {
		return fmt.Errorf("read the backup: %w", err)
	}
	rs.batch = append(rs.batch, sp)
	return nil
}

// flush sends the piece being built. When the node refuses it as too
// large, pieces are halved from then on and its values added again.
func (rs *restorer) flush(ctx context.Context) error {
	if len(rs.batch) == 0 {
		return nil
	}
	rs.buf.WriteByte('}')
	body := bytes.NewReader(rs.buf.Bytes())
	err := rs.send(ctx, http.MethodPatch, "", body, int64(rs.buf.Len()))
	batch := rs.batch
	rs.batch = nil
	if hasStatus(err, http.StatusRequestEntityTooLarge) {
		if rs.budget/2 < restorePieceMin {
			return fmt.Errorf("the node refuses even %s in one write: %w", humanBytes(rs.budget), err)
		}
		rs.budget /= 2
		fmt.Fprintf(rs.out, "restore: the node refused a piece of %s as too large; pieces of at most %s from now on\n", humanBytes(int64(rs.buf.Len())), humanBytes(rs.budget))
		for _, sp := range batch {
			if err := rs.add(ctx, sp); err != nil {
				return err
			}
		}
		return nil
	}
	if err != nil {
		return err
	}
	rs.pieces++
	for _, sp := range batch {
		rs.done += sp.size()
	}
	rs.show(false)
	return nil
}

// show prints the progress at most once a second, and always when last.
func (rs *restorer) show(last bool) {
	if !last && time.Since(rs.shown) < time.Second {
		return
	}
	rs.shown = time.Now()
	fmt.Fprintf(rs.out, "restore: %d pieces written, %s of %s (%.0f%%)\n", rs.pieces, humanBytes(rs.done), humanBytes(rs.total), 100*float64(rs.done)/float64(max(rs.total, 1)))
}
