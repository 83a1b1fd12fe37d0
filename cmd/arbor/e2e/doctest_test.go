package e2e

import (
	"bufio"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"testing"
)

// The documents' shell sessions are tests (see TestReadmeSessions). The
// convention, which README.md's "Development" section states for
// writers:
//
//   - Only ```console blocks run; ```sh blocks are illustrations.
//   - A line "$ command" is a command. It goes on over the next lines
//     when it ends in a backslash or opens a here-document (<<'END'),
//     which ends at its terminator line.
//   - A line "# text" between commands is a comment.
//   - Every other line up to the next command or comment is the
//     command's expected output (standard output and error). Blank lines
//     are not compared, so frames and paragraphs may be spaced freely.
//   - "…" alone on a line stands for any number of lines (HTTP headers).
//   - Push keys (20 characters starting with "-") and the value of an
//     "etag:" header match any key or ETag; the one the node returned
//     then replaces the document's in every later command and output.
//   - A command ending in "&" runs in the background (an event stream):
//     its expected output must appear before the next command runs, and
//     what it prints later is expected after the output of the command
//     that caused it, as a terminal shows it.
//   - "bin/arbor serve FLAGS &" starts the node the commands that follow
//     talk to; before one, they talk to a node started as `make run`
//     starts it. https://localhost:8443 is that node.

// docCommand is one command of a document's console block and what the
// document says it prints.
type docCommand struct {
	Line       int    // line of the "$ " in the document, from 1
	Text       string // the command, continuation lines joined by "\n"
	Background bool   // it ends in "&" (removed from Text)
	Want       []string
}

// heredocStart finds a here-document's terminator word in a command line.
var heredocStart = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// parseConsoleBlocks returns the commands of every ```console block of
// doc, in order.
func parseConsoleBlocks(doc string) ([]docCommand, error) {
	var cmds []docCommand
	inBlock := false
	var cur *docCommand
	var heredoc string // terminator while inside a here-document
	continued := false // the previous command line ended in a backslash
	flush := func() {
		if cur != nil {
			cmds = append(cmds, *cur)
			cur = nil
		}
	}
	sc := bufio.NewScanner(strings.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	indent := "" // of the block's fence (a block inside a list item), removed from its lines
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if !inBlock {
			inBlock = trimmed == "```console"
			indent = line[:len(line)-len(strings.TrimLeft(line, " \t"))]
			continue
		}
		line = strings.TrimPrefix(line, indent)
		switch {
		case heredoc != "":
			cur.Text += "\n" + line
			if trimmed == heredoc {
				heredoc = ""
			}
			continue
		case continued:
			cur.Text += "\n" + line
			continued = strings.HasSuffix(line, `\`)
			continue
		case strings.HasPrefix(trimmed, "```"):
			flush()
			inBlock = false
			continue
		case strings.HasPrefix(line, "$ "):
			flush()
			cur = &docCommand{Line: n, Text: strings.TrimPrefix(line, "$ ")}
			if m := heredocStart.FindStringSubmatch(line); m != nil {
				heredoc = m[1]
			}
			continued = strings.HasSuffix(line, `\`)
			continue
		case strings.HasPrefix(line, "# "), trimmed == "#":
			flush()
			continue
		case cur == nil:
			if trimmed != "" {
				return nil, fmt.Errorf("line %d: output %q before any command", n, line)
			}
			continue
		}
		if trimmed != "" {
			cur.Want = append(cur.Want, strings.TrimRight(line, " \t"))
		}
	}
	if inBlock || heredoc != "" {
		return nil, fmt.Errorf("a console block or here-document is not closed at the end")
	}
	flush()
	for i := range cmds {
		c := &cmds[i]
		text := strings.TrimRight(stripComment(c.Text), " \t")
		if strings.HasSuffix(text, "&") && !strings.HasSuffix(text, "&&") {
			c.Background = true
			c.Text = strings.TrimRight(strings.TrimSuffix(text, "&"), " \t")
		}
	}
	return cmds, nil
}

// stripComment drops a trailing "# comment" from a one-line command (a
// "#" after a space, outside quotes); commands spanning lines are kept
// whole.
func stripComment(cmd string) string {
	if strings.Contains(cmd, "\n") {
		return cmd
	}
	var quote rune
	for i, r := range cmd {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && i > 0 && (cmd[i-1] == ' ' || cmd[i-1] == '\t'):
			return strings.TrimRight(cmd[:i], " \t")
		}
	}
	return cmd
}

// outputLines splits a command's output into the lines that are
// compared: without blank lines and trailing spaces (curl -i ends the
// status line with one, and headers with \r).
func outputLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimRight(l, " \t\r")
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// bindings map a value written in a document (a push key, an ETag) to
// the one the node produced in its place.
type bindings map[string]string

// apply replaces every bound value in s.
func (b bindings) apply(s string) string {
	for doc, real := range b {
		s = strings.ReplaceAll(s, doc, real)
	}
	return s
}

var (
	pushKeyPattern = regexp.MustCompile(`-[-0-9A-Za-z_]{19}`)
	etagLine       = regexp.MustCompile(`(?i)^(etag:\s*)(\S+)$`)
	etagValue      = `([A-Za-z0-9+/=_-]+)`
	pushKeyValue   = `(-[-0-9A-Za-z_]{19})`
)

// matchLine matches one expected line against an actual one. A push key
// or ETag already bound must be the bound value; one not bound yet
// matches its pattern and is bound to what the line holds.
func matchLine(want, got string, b bindings) (bindings, bool) {
	var pattern strings.Builder
	var placeholders []string
	rest := want
	if m := etagLine.FindStringSubmatch(want); m != nil {
		pattern.WriteString("(?i)" + regexp.QuoteMeta(m[1]))
		if real, ok := b[m[2]]; ok {
			pattern.WriteString(regexp.QuoteMeta(real))
		} else {
			pattern.WriteString(etagValue)
			placeholders = append(placeholders, m[2])
		}
		rest = ""
	}
	for rest != "" {
		loc := pushKeyPattern.FindStringIndex(rest)
		if loc == nil || !isKeyBoundary(rest, loc) {
			pattern.WriteString(regexp.QuoteMeta(rest))
			break
		}
		pattern.WriteString(regexp.QuoteMeta(rest[:loc[0]]))
		key := rest[loc[0]:loc[1]]
		if real, ok := b[key]; ok {
			pattern.WriteString(regexp.QuoteMeta(real))
		} else {
			pattern.WriteString(pushKeyValue)
			placeholders = append(placeholders, key)
		}
		rest = rest[loc[1]:]
	}
	m := regexp.MustCompile("^" + pattern.String() + "$").FindStringSubmatch(got)
	if m == nil {
		return nil, false
	}
	if len(placeholders) == 0 {
		return b, true
	}
	nb := maps.Clone(b)
	for i, doc := range placeholders {
		if real, ok := nb[doc]; ok && real != m[i+1] {
			return nil, false // one document value, two real ones
		}
		nb[doc] = m[i+1]
	}
	return nb, true
}

// isKeyBoundary reports whether the match loc in s is a whole push key,
// not part of a longer word.
func isKeyBoundary(s string, loc []int) bool {
	keyChar := func(c byte) bool {
		return c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
	}
	return (loc[0] == 0 || !keyChar(s[loc[0]-1])) && (loc[1] == len(s) || !keyChar(s[loc[1]]))
}

// matchAll matches want against all of got; "…" stands for any lines.
func matchAll(want, got []string, b bindings) (bindings, bool) {
	nb, n, ok := matchPrefix(want, got, b, true)
	return nb, ok && n == len(got)
}

// matchPrefix matches want against the start of got and returns how many
// lines of got it used; with whole, only a match of all of got counts.
func matchPrefix(want, got []string, b bindings, whole bool) (bindings, int, bool) {
	if len(want) == 0 {
		if whole && len(got) > 0 {
			return nil, 0, false
		}
		return b, 0, true
	}
	if want[0] == "…" {
		for skip := 0; skip <= len(got); skip++ {
			if nb, n, ok := matchPrefix(want[1:], got[skip:], b, whole); ok {
				return nb, skip + n, true
			}
		}
		return nil, 0, false
	}
	if len(got) == 0 {
		return nil, 0, false
	}
	nb, ok := matchLine(want[0], got[0], b)
	if !ok {
		return nil, 0, false
	}
	nb, n, ok := matchPrefix(want[1:], got[1:], nb, whole)
	return nb, n + 1, ok
}

// TestParseConsoleBlocks: the convention's pieces — comments, outputs,
// continuation lines, here-documents, background commands, indented
// blocks, "…" and bound values.
func TestParseConsoleBlocks(t *testing.T) {
	doc := "text\n```sh\n$ not run\n```\n" +
		"  ```console\n  # a comment\n  $ echo a \\\n    b\n  a b\n\n  $ cat <<'X'\n  $ inside\n  X\n  out\n  $ tail -f log &  # follows\n  ```\n"
	cmds, err := parseConsoleBlocks(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 3 ||
		cmds[0].Text != "echo a \\\n  b" || strings.Join(cmds[0].Want, "|") != "a b" ||
		cmds[1].Text != "cat <<'X'\n$ inside\nX" || strings.Join(cmds[1].Want, "|") != "out" ||
		cmds[2].Text != "tail -f log" || !cmds[2].Background {
		t.Fatalf("parsed %#v", cmds)
	}
	b, ok := matchAll([]string{"HTTP/2 200", "…", "etag: abc=", "…", `{"name":"-AAAAAAAAAAAAAAAAAAA"}`},
		[]string{"HTTP/2 200", "x: y", "etag: real=", "", `{"name":"-BBBBBBBBBBBBBBBBBBB"}`}, bindings{})
	if !ok || b["abc="] != "real=" || b["-AAAAAAAAAAAAAAAAAAA"] != "-BBBBBBBBBBBBBBBBBBB" {
		t.Fatalf("match %v %v", ok, b)
	}
	if _, ok := matchAll([]string{`{"name":"-AAAAAAAAAAAAAAAAAAA"}`}, []string{`{"name":"-CCCCCCCCCCCCCCCCCCC"}`}, b); ok {
		t.Error("a bound push key matched another key")
	}
}
