package cluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter lets hashicorp/raft (and its transport and snapshot store),
// which speak hclog, write through the node's slog.Logger, so every log
// line of the process has one format and one level switch.
type hclogAdapter struct {
	l       *slog.Logger
	name    string
	implied []any
	// floor is an extra minimum level set through SetLevel; shared by every
	// logger derived with With/Named, as hclog does.
	floor *atomic.Int32
}

var _ hclog.Logger = (*hclogAdapter)(nil)

// newHCLogger returns an hclog.Logger that logs to l with a "component"
// attribute of name.
func newHCLogger(l *slog.Logger, name string) hclog.Logger {
	floor := new(atomic.Int32)
	floor.Store(int32(hclog.Trace))
	return &hclogAdapter{l: l, name: name, floor: floor}
}

// slogLevel maps an hclog level to slog; Trace sits below Debug.
func slogLevel(level hclog.Level) slog.Level {
	switch level {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default: // Info, NoLevel, DefaultLevel
		return slog.LevelInfo
	}
}

func (a *hclogAdapter) enabled(level hclog.Level) bool {
	if level == hclog.Off || level < hclog.Level(a.floor.Load()) {
		return false
	}
	return a.l.Enabled(context.Background(), slogLevel(level))
}

// Log implements hclog.Logger.
func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if !a.enabled(level) {
		return
	}
	attrs := make([]any, 0, 2+len(a.implied)+len(args))
	attrs = append(attrs, "component", a.name)
	attrs = append(attrs, a.implied...)
	attrs = append(attrs, fixArgs(args)...)
	level = routineLevel(level, msg, args)
	if !a.enabled(level) {
		return
	}
	a.l.Log(context.Background(), slogLevel(level), msg, attrs...)
}

// firstElection is Raft's line for a node that calls an election because
// no leader has spoken to it within the timeout.
const firstElection = "heartbeat timeout reached, starting election"

// routineLevel lowers Raft's warning about a missed heartbeat to Info
// when no leader has been heard of since the node started: that is how
// every node begins, and a lone node always elects itself this way, so a
// warning there would teach operators to ignore the one that matters (a
// leader that went silent).
func routineLevel(level hclog.Level, msg string, args []any) hclog.Level {
	if level != hclog.Warn || msg != firstElection {
		return level
	}
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] == "last-leader-id" && fmt.Sprint(args[i+1]) != "" {
			return level
		}
	}
	return hclog.Info
}

// fixArgs turns hclog's conventions into slog attributes: an hclog.Format
// standing where a key should be becomes a "detail", a dangling value gets
// a key, and hclog's formatting wrappers are rendered (see hclogValue).
func fixArgs(args []any) []any {
	out := make([]any, 0, len(args)+1)
	for i := 0; i < len(args); i++ {
		if f, ok := args[i].(hclog.Format); ok && len(f) > 0 {
			out = append(out, "detail", hclogValue(f))
			continue
		}
		if i+1 >= len(args) {
			out = append(out, "extra", hclogValue(args[i]))
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		out = append(out, key, hclogValue(args[i+1]))
		i++
	}
	return out
}

// hclogValue renders the wrappers hclog's own formatter understands
// (Raft logs its configuration as hclog.Fmt("%+v", servers)); slog would
// print them as plain slices, format verbs included.
func hclogValue(v any) any {
	switch v := v.(type) {
	case hclog.Format:
		if len(v) == 0 {
			return ""
		}
		if format, ok := v[0].(string); ok {
			return fmt.Sprintf(format, v[1:]...)
		}
		return fmt.Sprint(v...)
	case hclog.Hex:
		return fmt.Sprintf("0x%x", int(v))
	case hclog.Octal:
		return fmt.Sprintf("0%o", int(v))
	case hclog.Binary:
		return fmt.Sprintf("0b%b", int(v))
	case hclog.Quote:
		return string(v)
	}
	return v
}

// Trace implements hclog.Logger.
func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }

// Debug implements hclog.Logger.
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }

// Info implements hclog.Logger.
func (a *hclogAdapter) Info(msg string, args ...any) { a.Log(hclog.Info, msg, args...) }

// Warn implements hclog.Logger.
func (a *hclogAdapter) Warn(msg string, args ...any) { a.Log(hclog.Warn, msg, args...) }

// Error implements hclog.Logger.
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

// IsTrace implements hclog.Logger.
func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }

// IsDebug implements hclog.Logger.
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }

// IsInfo implements hclog.Logger.
func (a *hclogAdapter) IsInfo() bool { return a.enabled(hclog.Info) }

// IsWarn implements hclog.Logger.
func (a *hclogAdapter) IsWarn() bool { return a.enabled(hclog.Warn) }

// IsError implements hclog.Logger.
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

// ImpliedArgs implements hclog.Logger.
func (a *hclogAdapter) ImpliedArgs() []any { return a.implied }

// With implements hclog.Logger.
func (a *hclogAdapter) With(args ...any) hclog.Logger {
	b := *a
	b.implied = append(append([]any(nil), a.implied...), fixArgs(args)...)
	return &b
}

// Name implements hclog.Logger.
func (a *hclogAdapter) Name() string { return a.name }

// Named implements hclog.Logger.
func (a *hclogAdapter) Named(name string) hclog.Logger {
	b := *a
	if a.name != "" {
		name = a.name + "." + name
	}
	b.name = name
	return &b
}

// ResetNamed implements hclog.Logger.
func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	b := *a
	b.name = name
	return &b
}

// SetLevel implements hclog.Logger; it can only raise the bar set by the
// slog handler, never lower it.
func (a *hclogAdapter) SetLevel(level hclog.Level) { a.floor.Store(int32(level)) }

// GetLevel implements hclog.Logger: the lowest level that would be logged.
func (a *hclogAdapter) GetLevel() hclog.Level {
	for _, l := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if a.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

// StandardLogger implements hclog.Logger.
func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

// StandardWriter implements hclog.Logger: each line written becomes one
// record, at the level of its "[LEVEL]" prefix when InferLevels is set.
func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	infer := opts != nil && opts.InferLevels
	return &stdWriter{a: a, infer: infer}
}

type stdWriter struct {
	a     *hclogAdapter
	infer bool
}

// Write implements io.Writer: one log record per line written.
func (w *stdWriter) Write(p []byte) (int, error) {
	for _, line := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		msg := strings.TrimSpace(string(line))
		level := hclog.Info
		if w.infer {
			level, msg = inferLevel(msg)
		}
		w.a.Log(level, msg)
	}
	return len(p), nil
}

// inferLevel strips a "[LEVEL]" prefix as written by the standard log
// users inside the hashicorp libraries.
func inferLevel(msg string) (hclog.Level, string) {
	for prefix, level := range map[string]hclog.Level{
		"[TRACE]": hclog.Trace, "[DEBUG]": hclog.Debug, "[INFO]": hclog.Info,
		"[WARN]": hclog.Warn, "[ERR]": hclog.Error, "[ERROR]": hclog.Error,
	} {
		if rest, ok := strings.CutPrefix(msg, prefix); ok {
			return level, strings.TrimSpace(rest)
		}
	}
	return hclog.Info, msg
}
