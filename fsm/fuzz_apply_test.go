package fsm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzApply feeds arbitrary log entries to Apply: it must never panic, and
// an entry that fails must leave the tree exactly as it was.
func FuzzApply(f *testing.F) {
	for _, c := range goldenCommands() {
		f.Add(mustEncode(c))
	}
	// The onDisconnect commands (entry format 2), as committed.
	v2, _ := filepath.Glob(filepath.Join("testdata", "golden", "v2_disconnect_*.bin"))
	for _, file := range v2 {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	for _, c := range randomCommands(7, 30) {
		f.Add(mustEncode(c))
		if p, ok := parsedTwin(c); ok {
			f.Add(p.Encode())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := New()
		base := Command{Kind: CmdSet, Body: []byte(`{"a":{"b":[1,2,3]},"c":"x"}`)}
		m.Apply(Entry{Index: 1, Command: true, Data: mustEncode(base)})
		before := m.Root().ETag()
		if _, err := DecodeCommand(data); errors.Is(err, ErrUnsupportedVersion) {
			// A newer release's entry stops the node instead of diverging.
			defer func() {
				var ue *UnsupportedEntryError
				if p := recover(); p == nil {
					t.Fatal("an entry of a newer format did not stop Apply")
				} else if err, ok := p.(error); !ok || !errors.As(err, &ue) {
					t.Fatalf("panic %v, want *UnsupportedEntryError", p)
				}
			}()
		}
		r := m.Apply(Entry{Index: 2, Command: true, Data: data})
		if r.Err != nil && m.Root().ETag() != before {
			t.Fatalf("failed entry changed the tree: %v", r.Err)
		}
		if m.AppliedIndex() != 2 {
			t.Fatalf("applied index %d", m.AppliedIndex())
		}
	})
}
