package realtime

import (
	"encoding/json"
	"errors"
	"strconv"

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
