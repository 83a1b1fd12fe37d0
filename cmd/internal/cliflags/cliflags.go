// Package cliflags parses the command line of arbor's commands so that a
// mistake is one line naming the flag and what it wants, rather than the
// flag package's "parse error" followed by the whole usage: the full
// usage is printed only when asked for with -h.
package cliflags

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// Error is a mistake on the command line. Its message names the flag (as
// --name) or the argument, and never includes the usage.
type Error struct {
	// Flag is the flag's name without dashes; empty for an error that is
	// not about one flag.
	Flag string
	msg  string
}

// Error implements error.
func (e *Error) Error() string { return e.msg }

// Errorf returns an *Error about flag (its name without dashes).
func Errorf(flagName, format string, args ...any) *Error {
	return &Error{Flag: flagName, msg: fmt.Sprintf(format, args...)}
}

// Parse parses args with fs. With -h or --help it prints fs's usage to
// fs.Output() and returns flag.ErrHelp; any other mistake returns an
// *Error and prints nothing.
func Parse(fs *flag.FlagSet, args []string) error {
	// The flag package prints the error and the usage itself; both are
	// silenced, and the usage is printed below only for -h.
	out, usage := fs.Output(), fs.Usage
	var failed *Error
	restore := record(fs, &failed)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.SetOutput(out)
	fs.Usage = usage
	restore()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		if usage != nil {
			usage()
		} else {
			fs.PrintDefaults()
		}
		return flag.ErrHelp
	case failed != nil:
		return failed
	}
	return translate(err)
}

// ParseInterleaved is Parse for commands whose flags may come before,
// between or after their arguments (arbor members remove n3 --addr …);
// it returns the arguments.
func ParseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := Parse(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// Hint is the pointer to the full usage that follows a mistake.
func Hint(command string) string {
	return fmt.Sprintf("'%s -h' for help", command)
}

// Report writes err as the one line a command prints for a usage mistake:
// "<command>: <err> ('<command> -h' for help)".
func Report(w io.Writer, command string, err error) {
	fmt.Fprintf(w, "%s: %v (%s)\n", command, err, Hint(command))
}

// translate rewrites the flag package's own messages, which name flags
// with one dash and say "provided but not defined".
func translate(err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return Errorf(strings.TrimPrefix(name, "-"), "unknown flag --%s", strings.TrimPrefix(name, "-"))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return Errorf(strings.TrimPrefix(name, "-"), "--%s needs a value", strings.TrimPrefix(name, "-"))
	}
	return &Error{msg: msg}
}

// record wraps every flag's value for the length of one parse, so that a
// value the flag refuses is reported with the flag's name and what it
// wants. It returns the function that unwraps them again (flag.UnquoteUsage
// names an argument by the value's concrete type, so the usage needs the
// originals).
func record(fs *flag.FlagSet, failed **Error) (restore func()) {
	var wrapped []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		f.Value = &recording{Value: f.Value, name: f.Name, failed: failed}
		wrapped = append(wrapped, f)
	})
	return func() {
		for _, f := range wrapped {
			f.Value = f.Value.(*recording).Value
		}
	}
}

// recording is a flag.Value that remembers the first value refused.
type recording struct {
	flag.Value
	name   string
	failed **Error
}

// IsBoolFlag keeps boolean flags usable without a value.
func (r *recording) IsBoolFlag() bool {
	b, ok := r.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// Set implements flag.Value.
func (r *recording) Set(s string) error {
	err := r.Value.Set(s)
	if err != nil && *r.failed == nil {
		*r.failed = Errorf(r.name, "--%s %q: %s", r.name, s, Want(r.Value, err))
	}
	return err
}

// Want says what a flag's value must be, from the value's type, for the
// flag package's own types whose errors only say "parse error"; other
// values' errors are their own explanation.
func Want(v flag.Value, err error) string {
	g, ok := v.(flag.Getter)
	if !ok {
		return err.Error()
	}
	outOfRange := strings.Contains(err.Error(), "out of range")
	switch g.Get().(type) {
	case time.Duration:
		return "want a duration: a number with a unit, such as 300ms, 5s, 1m30s or 2h"
	case bool:
		return "want true or false"
	case int, int64:
		if outOfRange {
			return "out of range"
		}
		return "want a whole number"
	case uint, uint64:
		if outOfRange {
			return "out of range"
		}
		return "want a whole number, 0 or more"
	case float64:
		return "want a number"
	}
	return err.Error()
}
