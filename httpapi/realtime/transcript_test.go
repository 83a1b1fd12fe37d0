package realtime

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Transcripts (testdata/transcripts/*.txt) are exchanges after the
// hello: "> " lines are sent as they are, "< " lines are the messages the
// server must send next, compared as JSON values. "!set <path> <json>"
// and "!rules <json>" prepare the database as an admin before the
// connection opens; "!lag <duration>" makes the node's feeds see each
// write that long after its Propose returned, as a follower's do. Blank lines and "#" comments are skipped.
func TestTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/transcripts/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) { runTranscript(t, file) })
	}
}

func runTranscript(t *testing.T, file string) {
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := newRig(t, nil)
	var c *client
	for n, line := range strings.Split(string(text), "\n") {
		at := func() string { return file + ":" + itoa(n+1) }
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "!set "):
			path, v, _ := strings.Cut(strings.TrimPrefix(line, "!set "), " ")
			if err := r.db.set(path, v); err != nil {
				t.Fatalf("%s: %v", at(), err)
			}
		case strings.HasPrefix(line, "!lag "):
			d, err := time.ParseDuration(strings.TrimPrefix(line, "!lag "))
			if err != nil || c != nil {
				t.Fatalf("%s: !lag needs a duration, before the first message: %v", at(), err)
			}
			r.db.lagFeeds(d)
		case strings.HasPrefix(line, "!rules "):
			if err := r.db.setRules(strings.TrimPrefix(line, "!rules ")); err != nil {
				t.Fatalf("%s: %v", at(), err)
			}
		case strings.HasPrefix(line, "> "):
			if c == nil {
				c = r.dial()
			}
			c.sendText(strings.TrimPrefix(line, "> "))
		case strings.HasPrefix(line, "< "):
			if c == nil {
				t.Fatalf("%s: expected a message before sending any", at())
			}
			var want any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "< ")), &want); err != nil {
				t.Fatalf("%s: %v", at(), err)
			}
			got := c.read()
			if !reflect.DeepEqual(any(got), want) {
				t.Fatalf("%s:\n got %s\nwant %s", at(), mustJSON(got), mustJSON(want))
			}
		default:
			t.Fatalf("%s: unknown line %q", at(), line)
		}
	}
	if c != nil {
		c.quiet()
	}
}
