package realtime

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/arbordb/arbor/fsm/tree"
)

// readTable reads a testdata file of tab-separated pairs, skipping
// comment lines.
func readTable(t *testing.T, name string) [][2]string {
	t.Helper()
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][2]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, b, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("%s: bad line %q", name, line)
		}
		rows = append(rows, [2]string{a, b})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// The SDK's number text, on every power of two (where its exponent
// arithmetic misses), tiny numbers (where its fraction overflows) and
// assorted others. The expected texts were computed by the SDK's
// algorithm under Node.js.
func TestIEEE754HexMatchesTheSDK(t *testing.T) {
	rows := readTable(t, "sdk_ieee754.txt")
	if len(rows) < 2000 {
		t.Fatalf("only %d rows", len(rows))
	}
	for _, r := range rows {
		f, err := strconv.ParseFloat(r[0], 64)
		if err != nil {
			t.Fatalf("%q: %v", r[0], err)
		}
		if got := ieee754Hex(f); got != r[1] {
			t.Errorf("ieee754Hex(%s) = %s, the SDK's is %s", r[0], got, r[1])
		}
	}
}

// The SDK's hash of values of every kind: leaves, priorities on leaves
// and objects, children in priority order, integer keys, integers and
// doubles alike.
func TestHashMatchesTheSDK(t *testing.T) {
	for _, r := range readTable(t, "sdk_hashes.txt") {
		v, err := tree.ParseBody([]byte(r[0]), tree.MaxDepth)
		if err != nil {
			t.Fatalf("%s: %v", r[0], err)
		}
		if got := Hash(v); got != r[1] {
			t.Errorf("Hash(%s) = %q, the SDK's is %q", r[0], got, r[1])
		}
	}
}

func TestHashOfNothing(t *testing.T) {
	if h := Hash(nil); h != "" {
		t.Fatalf("Hash(null) = %q", h)
	}
}
