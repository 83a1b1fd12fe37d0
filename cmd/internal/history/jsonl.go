package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// maxLine bounds one line of a history file: a list read of a long run
// can be large, but not this large.
const maxLine = 64 << 20

// WriteFile writes ops to path as JSON lines, one operation per line, so
// a history can be grepped, diffed and re-checked (arbor-chaos -check).
func WriteFile(path string, ops []Op) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	w := bufio.NewWriter(f)
	if err := Encode(w, ops); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("history: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("history: close %s: %w", path, err)
	}
	return nil
}

// Encode writes ops to w as JSON lines.
func Encode(w io.Writer, ops []Op) error {
	enc := json.NewEncoder(w)
	for i := range ops {
		if err := enc.Encode(&ops[i]); err != nil {
			return fmt.Errorf("history: encode op %d: %w", ops[i].ID, err)
		}
	}
	return nil
}

// ReadFile reads a history written by WriteFile.
func ReadFile(path string) ([]Op, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	return Decode(f)
}

// Decode reads JSON lines of operations from r.
func Decode(r io.Reader) ([]Op, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var ops []Op
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			return nil, fmt.Errorf("history: line %d: %w", line, err)
		}
		ops = append(ops, op)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("history: read: %w", err)
	}
	return ops, nil
}
