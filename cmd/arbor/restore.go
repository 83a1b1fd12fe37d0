package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/arbordb/arbor/cluster"
)

// restoreOneWrite is the largest backup restore tries to send as one
// write: the most one replicated write may carry. A node may refuse less
// (its write size limit); restore then writes in pieces.
const restoreOneWrite = cluster.MaxWriteBytes

// errNotConfirmed says the operator did not confirm a destructive step.
var errNotConfirmed = errors.New("not confirmed")

// runRestore is `arbor restore --in file.json`: replaces the whole
// database with a backup (SPEC §10). A backup the node takes in one write
// is one PUT of the root, one log entry: atomic. Any other is written as
// a delete of the root, then PATCHes under the node's write limit, split
// as deep into the tree as needed: not atomic; the command says so first.
func runRestore(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("arbor restore", flag.ContinueOnError)
	var cf clientFlags
	cf.bind(fs)
	in := fs.String("in", "", "the backup `file` to load (required)")
	yes := fs.Bool("yes", false, "replace the database without asking")
	atomic := fs.Bool("atomic", false, "fail, changing nothing, unless the node takes the backup in one write")
	limit := fs.String("write-size-limit", "", "the `limit` each write asks for: tiny, small, medium, large or unlimited (default: the node's --default-write-size-limit); unlimited lets the largest backup go in one atomic write")
	pieceSize := fs.String("piece-size", "8MiB", "the largest `size` of one write when the backup is written in pieces; smaller when the node refuses one")
	maxTime := fs.Duration("max-time", time.Hour, "give up when the transfer takes longer than this")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: arbor restore --in file.json [--yes] [--atomic] [--addr host:port] [--ca ca.pem] [--auth secret]\n\nReplaces the WHOLE database with a backup made by arbor backup.\n\nFlags:\n")
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
	piece, err := parseByteSize(*pieceSize)
	if err != nil || piece < restorePieceMin {
		fmt.Fprintf(stderr, "arbor restore: --piece-size %q: want a size of at least %s, such as 8MiB\n", *pieceSize, humanBytes(restorePieceMin))
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
	root, err := trimmed(f, st.Size())
	if err != nil {
		fmt.Fprintf(stderr, "arbor restore: %s: %v\n", *in, err)
		return exitFailure
	}
	question := fmt.Sprintf("This replaces the whole database at %s with %s (%s).", cf.addr, *in, humanBytes(st.Size()))
	switch {
	case *atomic:
	case st.Size() > restoreOneWrite:
		question += "\nIt is larger than one write may be: the root is deleted first and the backup written in pieces, so readers see a partial database until it ends."
	default:
		question += "\nIf the node refuses it as one write (too large), the root is deleted and the backup written in pieces: readers then see a partial database until it ends."
	}
	if err := confirm(stdin, stderr, question, *yes, "--yes"); err != nil {
		fmt.Fprintf(stderr, "arbor restore: %v\n", err)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), *maxTime)
	defer cancel()
	start := time.Now()
	rs := &restorer{c: c, limit: *limit, r: f, total: st.Size(), out: stderr, budget: piece, backoff: time.Second}
	how, err := rs.restore(ctx, root, *atomic)
	if err != nil {
		fmt.Fprintf(stderr, "arbor restore: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "restore: %s (%s) loaded into %s in %s, %s\n", *in, humanBytes(st.Size()), cf.addr, time.Since(start).Round(time.Millisecond), how)
	return exitOK
}

// restore writes root, the backup's value, over the whole database: in
// one PUT when it is small enough and the node takes it, else (unless
// atomic) in pieces. It says how.
func (rs *restorer) restore(ctx context.Context, root span, atomic bool) (string, error) {
	b, err := firstByte(rs.r, root)
	if err != nil {
		return "", err
	}
	if root.size() <= restoreOneWrite || b != '{' {
		meter := newByteMeter("restore: sent", root.size(), rs.out)
		body := io.NewSectionReader(rs.r, root.start, root.size())
		err := rs.send(ctx, http.MethodPut, "", readSeekerTee{body, meter}, root.size())
		meter.done()
		switch {
		case err == nil:
			return "in one atomic write", nil
		case !hasStatus(err, http.StatusRequestEntityTooLarge) || b != '{':
			return "", err
		case atomic:
			return "", fmt.Errorf("%w; nothing was changed (without --atomic it is written in pieces)", err)
		}
		fmt.Fprintf(rs.out, "restore: the node refused the backup as one write (%v); deleting the database, then writing the backup in pieces\n", err)
		rs.budget = max(restorePieceMin, min(rs.budget, root.size()/2))
	} else if atomic {
		return "", fmt.Errorf("the backup (%s) is larger than one write may be (%s); nothing was changed", humanBytes(root.size()), humanBytes(restoreOneWrite))
	}
	if err := rs.clear(ctx); err != nil {
		return "", err
	}
	if err := rs.inPieces(ctx, root); err != nil {
		return "", fmt.Errorf("%w (the database now holds part of the backup: run the restore again)", err)
	}
	return fmt.Sprintf("in %d pieces (not atomic)", rs.pieces), nil
}

// readSeekerTee is a ReadSeeker that also writes what it reads to w (the
// progress), so a write sent again is counted again from its start.
type readSeekerTee struct {
	r io.ReadSeeker
	w io.Writer
}

func (t readSeekerTee) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	_, _ = t.w.Write(p[:n])
	return n, err
}

func (t readSeekerTee) Seek(off int64, whence int) (int64, error) { return t.r.Seek(off, whence) }

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
