package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

const (
	// restoreMaxRequest is the largest write a node accepts
	// (writeSizeLimit=unlimited, SPEC §3).
	restoreMaxRequest = 256 << 20
	// restoreBatch is how much a split restore sends per PATCH: large
	// enough to be quick, small enough to stay far from the limit.
	restoreBatch = 32 << 20
)

// errNotConfirmed says the operator did not confirm a destructive step.
var errNotConfirmed = errors.New("not confirmed")

// runRestore is `arbor restore --in file.json`: replaces the whole
// database with a backup (SPEC §10). A backup up to 256 MiB is written in
// one PUT of the root, one log entry: atomic. A larger one is written as
// a delete of the root and then PATCHes of its top-level children, which
// is not atomic; the command says so and asks first.
func runRestore(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("arbor restore", flag.ContinueOnError)
	var cf clientFlags
	cf.bind(fs)
	in := fs.String("in", "", "the backup `file` to load (required)")
	yes := fs.Bool("yes", false, "replace the database without asking")
	maxTime := fs.Duration("max-time", time.Hour, "give up when the transfer takes longer than this")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: arbor restore --in file.json [--yes] [--addr host:port] [--ca ca.pem] [--auth secret]\n\nReplaces the WHOLE database with a backup made by arbor backup.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, code, ok := parseToolFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 || *in == "" {
		fmt.Fprintln(stderr, "arbor restore: --in file.json is required and nothing else may follow the flags")
		return exitUsage
	}
	c, err := cf.client()
	if err != nil {
		fmt.Fprintf(stderr, "arbor restore: %v\n", err)
		return exitUsage
	}
	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintf(stderr, "arbor restore: %v\n", err)
		return exitUsage
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		fmt.Fprintf(stderr, "arbor restore: %v\n", err)
		return exitFailure
	}
	if err := checkOneJSONValue(bufio.NewReaderSize(f, 1<<20)); err != nil {
		fmt.Fprintf(stderr, "arbor restore: %s is not a backup (one JSON value): %v\n", *in, err)
		return exitUsage
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		fmt.Fprintf(stderr, "arbor restore: %v\n", err)
		return exitFailure
	}
	split := st.Size() > restoreMaxRequest
	question := fmt.Sprintf("This replaces the whole database at %s with %s (%s).", cf.addr, *in, humanBytes(st.Size()))
	if split {
		question += "\nIt is larger than one write may be: the root is deleted first and the backup written in parts, so readers see a partial database until it ends."
	}
	if err := confirm(stdin, stderr, question, *yes, "--yes"); err != nil {
		fmt.Fprintf(stderr, "arbor restore: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), *maxTime)
	defer cancel()
	start := time.Now()
	if split {
		err = restoreInParts(ctx, c, f, restoreBatch, stderr)
	} else {
		meter := newByteMeter("restore: sent", st.Size(), stderr)
		err = c.write(ctx, http.MethodPut, "/", io.TeeReader(f, meter), st.Size())
		meter.done()
	}
	if err != nil {
		fmt.Fprintf(stderr, "arbor restore: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "restore: %s (%s) loaded into %s in %s\n", *in, humanBytes(st.Size()), cf.addr, time.Since(start).Round(time.Millisecond))
	return exitOK
}

// confirm asks question on a terminal and wants "yes"; yes (the flag
// named flagName) skips it, and without a terminal (a script) nothing is
// assumed.
func confirm(stdin io.Reader, stderr io.Writer, question string, yes bool, flagName string) error {
	if yes {
		return nil
	}
	if f, ok := stdin.(*os.File); !ok || !term.IsTerminal(int(f.Fd())) {
		return fmt.Errorf("%w: stdin is not a terminal; pass %s to go on without asking", errNotConfirmed, flagName)
	}
	fmt.Fprintf(stderr, "%s\nType yes to go on: ", question)
	line, _ := bufio.NewReader(stdin).ReadString('\n')
	if strings.TrimSpace(line) != "yes" {
		return fmt.Errorf("%w: nothing was changed", errNotConfirmed)
	}
	return nil
}

// write sends body to path (a data path without ".json") with the largest
// write size limit and no echo.
func (c *adminClient) write(ctx context.Context, method, path string, body io.Reader, size int64) error {
	u := strings.TrimSuffix(path, "/") + "/.json?writeSizeLimit=unlimited&print=silent"
	resp, err := c.stream(ctx, method, u, body, size)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// restoreInParts deletes the root, then PATCHes the backup's top-level
// children in batches of about batchSize bytes; the root's priority, if
// any, last.
func restoreInParts(ctx context.Context, c *adminClient, r io.Reader, batchSize int, progress io.Writer) error {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("a backup this large must be a JSON object")
	}
	if err := c.write(ctx, http.MethodPut, "/", strings.NewReader("null"), 4); err != nil {
		return err
	}
	var (
		batch    bytes.Buffer
		priority json.RawMessage
		sent     int64
		children int
	)
	flush := func() error {
		if batch.Len() == 0 {
			return nil
		}
		batch.WriteByte('}')
		if err := c.write(ctx, http.MethodPatch, "/", bytes.NewReader(batch.Bytes()), int64(batch.Len())); err != nil {
			return err
		}
		sent += int64(batch.Len())
		fmt.Fprintf(progress, "restore: %d top-level children, %s written\n", children, humanBytes(sent))
		batch.Reset()
		return nil
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("read the backup: %w", err)
		}
		key, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return fmt.Errorf("read the backup at %q: %w", key, err)
		}
		if key == ".priority" {
			priority = value
			continue
		}
		if len(value) > restoreMaxRequest-1024 {
			return fmt.Errorf("the top-level child %q alone is %s, more than one write may be (%s)", key, humanBytes(int64(len(value))), humanBytes(restoreMaxRequest))
		}
		if batch.Len() > 0 && batch.Len()+len(key)+len(value) > batchSize {
			if err := flush(); err != nil {
				return err
			}
		}
		if batch.Len() == 0 {
			batch.WriteByte('{')
		} else {
			batch.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		batch.Write(k)
		batch.WriteByte(':')
		batch.Write(value)
		children++
	}
	if err := flush(); err != nil {
		return err
	}
	if priority != nil {
		return c.write(ctx, http.MethodPut, "/"+url.PathEscape(".priority"), bytes.NewReader(priority), int64(len(priority)))
	}
	return nil
}
