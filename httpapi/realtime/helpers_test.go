package realtime

import (
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/arbordb/arbor/fsm/tree"

	"github.com/coder/websocket"
)

func asCloseError(err error, ce *websocket.CloseError) bool { return errors.As(err, ce) }

// mustJSON renders v.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func itoa(n int) string { return strconv.Itoa(n) }

func utf8Valid(b []byte) bool { return utf8.Valid(b) }

// mustPath is a path from its text.
func mustPath(s string) tree.Path {
	p, err := tree.SplitPath(s)
	if err != nil {
		panic(err)
	}
	return p
}
