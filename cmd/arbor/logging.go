package main

import (
	"io"
	"log/slog"
)

// newLogger builds the process logger: logfmt-style text for people
// reading a terminal, one JSON object per line for log pipelines.
func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
