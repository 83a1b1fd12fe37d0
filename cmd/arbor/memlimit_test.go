package main

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"runtime/debug"
	"strings"
	"testing"
)

// fakeFiles is a readFile over a map: a missing name is fs.ErrNotExist,
// a name mapped to nil fails like an unreadable file.
func fakeFiles(files map[string]string) func(string) ([]byte, error) {
	return func(name string) ([]byte, error) {
		v, ok := files[name]
		if !ok {
			return nil, fs.ErrNotExist
		}
		if v == "\x00unreadable" {
			return nil, fs.ErrPermission
		}
		return []byte(v), nil
	}
}

// TestContainerMemoryLimit reads the cgroup files of both versions
// without touching the host's.
func TestContainerMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		name     string
		files    map[string]string
		want     int64
		wantFile string
		wantErr  string // "" means no error
	}{
		{"v2 no limit", map[string]string{cgroupV2MemoryMax: "max\n"}, 0, cgroupV2MemoryMax, ""},
		{"v2 limit", map[string]string{cgroupV2MemoryMax: "536870912\n"}, 512 << 20, cgroupV2MemoryMax, ""},
		{"v2 wins over v1", map[string]string{cgroupV2MemoryMax: "1073741824", cgroupV1MemoryLimit: "536870912"}, 1 << 30, cgroupV2MemoryMax, ""},
		{"v1 unlimited", map[string]string{cgroupV1MemoryLimit: "9223372036854771712\n"}, 0, cgroupV1MemoryLimit, ""},
		{"v1 limit", map[string]string{cgroupV1MemoryLimit: "2147483648\n"}, 2 << 30, cgroupV1MemoryLimit, ""},
		{"no files", map[string]string{}, 0, "", ""},
		{"v2 garbage", map[string]string{cgroupV2MemoryMax: "lots"}, 0, cgroupV2MemoryMax, `"lots" is not a memory limit`},
		{"v1 garbage", map[string]string{cgroupV1MemoryLimit: "max"}, 0, cgroupV1MemoryLimit, `"max" is not a memory limit`},
		{"v2 empty", map[string]string{cgroupV2MemoryMax: ""}, 0, cgroupV2MemoryMax, "is not a memory limit"},
		{"v2 negative", map[string]string{cgroupV2MemoryMax: "-1"}, 0, cgroupV2MemoryMax, "is not a memory limit"},
		{"v2 unreadable", map[string]string{cgroupV2MemoryMax: "\x00unreadable"}, 0, cgroupV2MemoryMax, "permission denied"},
	} {
		got, file, err := containerMemoryLimit(fakeFiles(c.files))
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: unexpected error %v", c.name, err)
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: got error %v, want one containing %q", c.name, err, c.wantErr)
		}
		if got != c.want || file != c.wantFile {
			t.Errorf("%s: got %d from %q, want %d from %q", c.name, got, file, c.want, c.wantFile)
		}
	}
}

// TestChooseMemoryLimit: GOMEMLIMIT wins, then the flag, then the share of
// the container's limit.
func TestChooseMemoryLimit(t *testing.T) {
	container := fakeFiles(map[string]string{cgroupV2MemoryMax: "1000000000"})
	noEnv := func(string) (string, bool) { return "", false }
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, k == "GOMEMLIMIT" }
	}
	for _, c := range []struct {
		name      string
		flag      int64
		lookupEnv func(string) (string, bool)
		readFile  func(string) ([]byte, error)
		want      memoryLimitChoice
		wantErr   bool
	}{
		{"container", 0, noEnv, container, memoryLimitChoice{Limit: 900000000, Source: cgroupV2MemoryMax, Container: 1000000000}, false},
		{"flag over container", 256 << 20, noEnv, container, memoryLimitChoice{Limit: 256 << 20, Source: "--memory-limit"}, false},
		{"GOMEMLIMIT over all", 256 << 20, env("300MiB"), container, memoryLimitChoice{Source: "GOMEMLIMIT"}, false},
		{"empty GOMEMLIMIT is unset", 0, env(""), container, memoryLimitChoice{Limit: 900000000, Source: cgroupV2MemoryMax, Container: 1000000000}, false},
		{"no container limit", 0, noEnv, fakeFiles(map[string]string{cgroupV2MemoryMax: "max"}), memoryLimitChoice{Source: cgroupV2MemoryMax}, false},
		{"no cgroup", 0, noEnv, fakeFiles(nil), memoryLimitChoice{}, false},
		{"garbage", 0, noEnv, fakeFiles(map[string]string{cgroupV1MemoryLimit: "?"}), memoryLimitChoice{Source: cgroupV1MemoryLimit}, true},
		{"flag needs no cgroup", 128 << 20, noEnv, fakeFiles(map[string]string{cgroupV1MemoryLimit: "?"}), memoryLimitChoice{Limit: 128 << 20, Source: "--memory-limit"}, false},
	} {
		got, err := chooseMemoryLimit(c.flag, c.lookupEnv, c.readFile)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("%s: got %+v, %v; want %+v, error %v", c.name, got, err, c.want, c.wantErr)
		}
	}
}

// TestApplyMemoryLimit sets the runtime's limit (restored afterwards) and
// logs where it came from.
func TestApplyMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	noEnv := func(string) (string, bool) { return "", false }
	for _, c := range []struct {
		name      string
		flag      int64
		lookupEnv func(string) (string, bool)
		files     map[string]string
		wantLimit int64 // -1: unchanged
		wantLog   string
	}{
		{"container", 0, noEnv, map[string]string{cgroupV1MemoryLimit: "1073741824"}, 966367620, "90% of the container's memory limit"},
		{"flag", 512 << 20, noEnv, map[string]string{cgroupV2MemoryMax: "max"}, 512 << 20, "limit=512.0MiB"},
		{"none", 0, noEnv, map[string]string{cgroupV2MemoryMax: "max"}, -1, "no Go memory limit"},
		{"garbage", 0, noEnv, map[string]string{cgroupV2MemoryMax: "x"}, -1, "could not read the container's memory limit"},
		{"GOMEMLIMIT", 512 << 20, func(k string) (string, bool) { return "300MiB", k == "GOMEMLIMIT" }, nil, -1, "ignored_memory_limit=512.0MiB"},
	} {
		const sentinel = 3 << 30
		debug.SetMemoryLimit(sentinel)
		var buf bytes.Buffer
		applyMemoryLimit(c.flag, c.lookupEnv, fakeFiles(c.files), slog.New(slog.NewTextHandler(&buf, nil)))
		want := c.wantLimit
		if want == -1 {
			want = sentinel
		}
		if got := debug.SetMemoryLimit(-1); got != want {
			t.Errorf("%s: limit %d, want %d", c.name, got, want)
		}
		if !strings.Contains(buf.String(), c.wantLog) {
			t.Errorf("%s: log %q lacks %q", c.name, buf.String(), c.wantLog)
		}
	}
}

// TestParseByteSize covers the units --memory-limit accepts.
func TestParseByteSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"1048576", 1 << 20}, {"512MiB", 512 << 20}, {"2GiB", 2 << 30}, {"2Gi", 2 << 30},
		{"64Mi", 64 << 20}, {"1G", 1e9}, {"1GB", 1e9}, {"100B", 100}, {" 3 KiB ", 3 << 10}, {"1TiB", 1 << 40},
	} {
		got, err := parseByteSize(c.in)
		if err != nil || got != c.want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{"", "lots", "1.5GiB", "-1", "512mib", "MiB", "9999999TiB", "1 2"} {
		if got, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) = %d, want an error", in, got)
		} else if !errors.Is(err, errByteSize) && !strings.Contains(err.Error(), "more than") {
			t.Errorf("parseByteSize(%q): unexpected error %v", in, err)
		}
	}
}
