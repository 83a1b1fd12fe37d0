package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbordb/arbor/fsm/tree"
)

// chunkLogs splits entry into chunk logs of size bytes from index on.
func chunkLogs(op ChunkID, entry []byte, size int, index, term uint64) []Entry {
	var pieces [][]byte
	for len(entry) > 0 {
		n := min(size, len(entry))
		pieces = append(pieces, entry[:n])
		entry = entry[n:]
	}
	var logs []Entry
	for i, p := range pieces {
		logs = append(logs, Entry{Index: index + uint64(i), Term: term, Command: true, Data: EncodeChunk(op, i, len(pieces), p)})
	}
	return logs
}

// TestChunkedCommandAppliesAtTheLastChunk: a command split into chunks
// changes nothing until its last chunk, then answers and changes the tree
// exactly as the whole entry would.
func TestChunkedCommandAppliesAtTheLastChunk(t *testing.T) {
	c, _ := parsedTwin(cmd(t, CmdUpdate, "/u", `{"a/b":"`+strings.Repeat("x", 5000)+`","c":{".sv":"timestamp"}}`))
	entry := c.EncodeParsed()
	whole := New()
	want := whole.Apply(Entry{Index: 1, Term: 1, Command: true, Data: entry})

	f := New()
	logs := chunkLogs(ChunkID{1}, entry, 1000, 1, 1)
	var last *ApplyResponse
	for i, l := range logs {
		last = f.Apply(l)
		if i < len(logs)-1 && (f.Root() != nil || last.Err != nil) {
			t.Fatalf("chunk %d: tree %s, err %v", i, renderExport(f.Root()), last.Err)
		}
		if _, err := f.Snapshot(); i < len(logs)-1 && !errors.Is(err, ErrChunkPending) {
			t.Fatalf("snapshot with a command half applied: %v", err)
		}
	}
	if last.Err != nil || renderExport(f.Root()) != renderExport(whole.Root()) || last.Result.ETag != want.Result.ETag {
		t.Fatalf("chunked: %v %s, whole: %s", last.Err, renderExport(f.Root()), renderExport(whole.Root()))
	}
	if _, err := f.Snapshot(); err != nil {
		t.Fatalf("snapshot after the command: %v", err)
	}
}

// TestChunkedCommandAbandoned: a newer term, another command's first
// chunk, a chunk out of order, or a long silence drop the command being
// assembled; nothing of it is applied.
func TestChunkedCommandAbandoned(t *testing.T) {
	set := cmd(t, CmdSet, "/x", `"`+strings.Repeat("y", 3000)+`"`)
	entry := set.Encode()
	other := cmd(t, CmdSet, "/other", "1")
	logs := chunkLogs(ChunkID{1}, entry, 1000, 1, 1)
	for name, tc := range map[string]func(f *FSM){
		"new term": func(f *FSM) {
			f.Apply(Entry{Index: 2, Term: 2})
		},
		"another command": func(f *FSM) {
			f.Apply(chunkLogs(ChunkID{2}, entry, 1000, 2, 1)[0])
		},
		"out of order": func(f *FSM) {
			l := logs[2]
			l.Index = 2
			if r := f.Apply(l); !errors.Is(r.Err, tree.ErrInvalidData) {
				t.Fatalf("out of order chunk: %v", r.Err)
			}
		},
		"silence": func(f *FSM) {
			f.Apply(Entry{Index: 2 + chunkAbandonAfter, Term: 1, Command: true, Data: other.Encode()})
		},
	} {
		t.Run(name, func(t *testing.T) {
			f := New()
			f.Apply(logs[0])
			tc(f)
			if _, err := f.Snapshot(); name != "another command" && err != nil {
				t.Fatalf("still pending: %v", err)
			}
			// The rest of the first command no longer completes it.
			for _, l := range logs[1:] {
				l := l
				l.Index += 2 * chunkAbandonAfter
				f.Apply(l)
			}
			if got := f.Root().Child("x"); got != nil {
				t.Fatalf("an abandoned command was applied: %s", renderExport(f.Root()))
			}
		})
	}
}

// TestEncodeChunkRoundTrip keeps EncodeChunk's layout pinned.
func TestEncodeChunkRoundTrip(t *testing.T) {
	b := EncodeChunk(ChunkID{9}, 1, 3, []byte("abc"))
	if b[0] != 3 || CommandKind(b[1]) != CmdChunk || !bytes.HasSuffix(b, []byte("\x03abc")) {
		t.Fatalf("chunk entry %v", b)
	}
}

// TestGoldenChunkEntries pins entry format 3: the golden set split into
// two chunk entries applies as the set.
func TestGoldenChunkEntries(t *testing.T) {
	set, _ := parsedTwin(goldenCommands()["v1_set.bin"])
	entry := set.EncodeParsed()
	logs := chunkLogs(ChunkID{0xA7}, entry, len(entry)/2+1, 1, 1)
	f := New()
	for i, l := range logs {
		file := filepath.Join("testdata", "golden", fmt.Sprintf("v3_chunk_%d.bin", i))
		if *updateGolden {
			if err := os.WriteFile(file, l.Data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(data, l.Data) {
			t.Fatalf("%s: this build encodes differently from the committed entry", file)
		}
		if r := f.Apply(Entry{Index: uint64(i + 1), Term: 1, Command: true, Data: data}); r.Err != nil {
			t.Fatalf("%s: %v", file, r.Err)
		}
	}
	if got := renderExport(f.Root()); got != `{"users":{"jack":{"at":1700000000123,"n":1,"name":"Jack"}}}` {
		t.Fatalf("tree after the golden chunks: %s", got)
	}
}

// TestWriteBudget: a write up to ChunkBytes has the write timeout; a
// larger one ChunkTime more per piece.
func TestWriteBudget(t *testing.T) {
	for _, tc := range []struct {
		size int
		want time.Duration
	}{
		{0, 5 * time.Second},
		{ChunkBytes, 5 * time.Second},
		{ChunkBytes + 1, 5*time.Second + 5*ChunkTime},
		{12_000_000, 5*time.Second + 46*ChunkTime},
	} {
		if got := WriteBudget(5*time.Second, tc.size); got != tc.want {
			t.Errorf("WriteBudget(5s, %d) = %s, want %s", tc.size, got, tc.want)
		}
	}
}
