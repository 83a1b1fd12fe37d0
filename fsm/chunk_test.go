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
	return chunkLogsWith(EncodeChunk, op, entry, size, index, term)
}

// chunkLogsWith is chunkLogs with the given chunk encoding.
func chunkLogsWith(encode func(ChunkID, int, int, []byte) []byte, op ChunkID, entry []byte, size int, index, term uint64) []Entry {
	var pieces [][]byte
	for len(entry) > 0 {
		n := min(size, len(entry))
		pieces = append(pieces, entry[:n])
		entry = entry[n:]
	}
	var logs []Entry
	for i, p := range pieces {
		logs = append(logs, Entry{Index: index + uint64(i), Term: term, Command: true, Data: encode(op, i, len(pieces), p)})
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
	s := EncodeStrictChunk(ChunkID{9}, 1, 3, []byte("abc"))
	if s[0] != 6 || CommandKind(s[1]) != CmdChunkStrict || !bytes.Equal(s[2:], b[2:]) {
		t.Fatalf("strict chunk entry %v", s)
	}
}

// TestGoldenChunkEntries pins entry formats 3 and 6: the golden set split
// into two chunk entries applies as the set.
func TestGoldenChunkEntries(t *testing.T) {
	t.Run("v3", func(t *testing.T) { testGoldenChunkEntries(t, EncodeChunk, "v3_chunk_%d.bin") })
	t.Run("v6", func(t *testing.T) { testGoldenChunkEntries(t, EncodeStrictChunk, "v6_strict_chunk_%d.bin") })
}

func testGoldenChunkEntries(t *testing.T, encode func(ChunkID, int, int, []byte) []byte, name string) {
	set, _ := parsedTwin(goldenCommands()["v1_set.bin"])
	entry := set.EncodeParsed()
	logs := chunkLogsWith(encode, ChunkID{0xA7}, entry, len(entry)/2+1, 1, 1)
	f := New()
	for i, l := range logs {
		file := filepath.Join("testdata", "golden", fmt.Sprintf(name, i))
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
		{ChunkBytes + 1, 5*time.Second + 9*ChunkTime},
		{12_000_000, 5*time.Second + 92*ChunkTime},
	} {
		if got := WriteBudget(5*time.Second, tc.size); got != tc.want {
			t.Errorf("WriteBudget(5s, %d) = %s, want %s", tc.size, got, tc.want)
		}
	}
}

// TestStrictChunkRefusesWhatItCannotRebase: in CmdChunkStrict entries, a
// PATCH of many fields whose node other writes changed between its chunks
// beyond what its prepared value can follow is refused, nothing applied,
// on every replica alike (the decision depends only on the log); fewer
// fields, a rebase that works, a shape not prepared, and CmdChunk entries
// are applied as before.
func TestStrictChunkRefusesWhatItCannotRebase(t *testing.T) {
	defer tinyRebaseBounds()() // four keys written between cannot be rebased
	was := strictOneStepFields
	strictOneStepFields = 100
	defer func() { strictOneStepFields = was }()
	setup := []string{`PUT /big {"a":1,"b":2}`}
	tooMany := []string{"PUT /big/w 1", "PUT /big/x 2", "PUT /big/y 3", "PUT /big/z 4"}
	for _, tc := range []struct {
		name    string
		strict  bool
		body    string
		between []string
		refused bool
	}{
		{"strict, many fields, cannot rebase", true, manyFields(300, "k"), tooMany, true},
		{"plain chunks, many fields, cannot rebase", false, manyFields(300, "k"), tooMany, false},
		{"strict, few fields, cannot rebase", true, manyFields(90, "k"), tooMany, false},
		{"strict, many fields, rebased", true, manyFields(300, "k"), tooMany[:2], false},
		{"strict, many fields, nothing between", true, manyFields(300, "k"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := parsedCmd(t, CmdUpdate, "/big", tc.body)
			entry := c.EncodeParsed()
			ref := New() // the writes between, then the PATCH in one entry
			for i, s := range append(append([]string{}, setup...), tc.between...) {
				applySetup(t, ref, uint64(i+1), s)
			}
			before := renderExport(ref.Root())
			want := ref.Apply(Entry{Index: 100, Term: 1, Command: true, Data: entry})
			encode := EncodeChunk
			if tc.strict {
				encode = EncodeStrictChunk
			}
			f := New()
			applySetup(t, f, 1, setup[0])
			logs := chunkLogsWith(encode, ChunkID{3}, entry, len(entry)/4+1, 2, 1)
			index := uint64(1)
			var got *ApplyResponse
			_, _, refusedBefore := ChunkedApplies()
			for i, l := range logs {
				if i == 1 {
					for _, s := range tc.between {
						index++
						applySetup(t, f, index, s)
					}
				}
				index++
				l.Index = index
				got = f.Apply(l)
			}
			_, _, refusedAfter := ChunkedApplies()
			if tc.refused {
				if !errors.Is(got.Err, ErrWriteConflict) || !errors.Is(FromCode(Code(got.Err), ""), ErrWriteConflict) {
					t.Fatalf("error %v, want ErrWriteConflict (surviving forwarding)", got.Err)
				}
				if renderExport(f.Root()) != before || refusedAfter != refusedBefore+1 {
					t.Fatalf("refused, yet applied: %.200s (refused %d)", renderExport(f.Root()), refusedAfter-refusedBefore)
				}
				return
			}
			if got.Err != nil || want.Err != nil || renderExport(f.Root()) != renderExport(ref.Root()) || refusedAfter != refusedBefore {
				t.Fatalf("applied: error %v (one step: %v), tree %.200s, want %.200s", got.Err, want.Err, renderExport(f.Root()), renderExport(ref.Root()))
			}
		})
	}
	// A command's chunks are all of one kind.
	c := parsedCmd(t, CmdUpdate, "/big", manyFields(300, "k"))
	entry := c.EncodeParsed()
	logs := chunkLogs(ChunkID{4}, entry, len(entry)/3+1, 2, 1)
	strict := chunkLogsWith(EncodeStrictChunk, ChunkID{4}, entry, len(entry)/3+1, 2, 1)
	f := New()
	f.Apply(logs[0])
	if r := f.Apply(strict[1]); !errors.Is(r.Err, tree.ErrInvalidData) {
		t.Fatalf("a strict chunk after a plain one of the same command: %v, want invalid data", r.Err)
	}
}

// TestLargeWriteProgress: the pieces of the command being assembled, and
// none once it is applied.
func TestLargeWriteProgress(t *testing.T) {
	c := parsedCmd(t, CmdUpdate, "/big", manyFields(300, "k"))
	entry := c.EncodeParsed()
	logs := chunkLogs(ChunkID{5}, entry, len(entry)/3+1, 1, 1)
	f := New()
	for i, l := range logs {
		if a, n := f.LargeWriteProgress(); a != i || (i > 0) != (n == len(logs)) {
			t.Fatalf("before piece %d: %d of %d", i, a, n)
		}
		if r := f.Apply(l); r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	if a, n := f.LargeWriteProgress(); a != 0 || n != 0 {
		t.Fatalf("after the last piece: %d of %d", a, n)
	}
}
