package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// The files that hold the container's memory limit, as a container sees
// its own cgroup (cgroup namespaces on v2, Docker's and the kubelet's
// mounts on v1). On a host outside any container the v2 root cgroup has
// no memory.max and v1 reports its huge "unlimited" value, so nothing is
// set.
const (
	cgroupV2MemoryMax   = "/sys/fs/cgroup/memory.max"
	cgroupV1MemoryLimit = "/sys/fs/cgroup/memory/memory.limit_in_bytes"
)

// memoryLimitPercent is the share of the container's memory limit given
// to the Go runtime as its soft limit (debug.SetMemoryLimit). The runtime
// counts only the memory it manages; the rest of the container's limit
// covers what it does not see: bbolt's memory-mapped raft.db pages and
// the kernel's page cache for the log and snapshots, which the cgroup
// charges too, plus the lag between freed and returned pages. 90 % keeps
// the collector from running hot until the heap is close to the limit,
// and the kernel's OOM killer away when it gets there.
const memoryLimitPercent = 90

// cgroupV1Unlimited: cgroup v1 writes "no limit" as the largest page
// count times the page size (9223372036854771712 on 64-bit Linux), not
// as a word; any value this large is that, not a real limit.
const cgroupV1Unlimited = 1 << 62

// minMemoryLimit is the smallest --memory-limit accepted: below it the
// collector would run almost continuously just to hold an idle node's
// heap, the Raft log cache and the connections' buffers under it.
const minMemoryLimit = 64 << 20

// containerMemoryLimit reads the container's memory limit through
// readFile (os.ReadFile in production; tests pass a map), trying cgroup
// v2 first, then v1. It returns 0 and the file read when the cgroup sets
// no limit ("max", v1's huge value), 0 and "" when neither file exists (not
// Linux, or no memory controller), and an error for anything it cannot
// read or parse, so a surprise is logged rather than guessed at.
func containerMemoryLimit(readFile func(string) ([]byte, error)) (limit int64, file string, err error) {
	for _, f := range []string{cgroupV2MemoryMax, cgroupV1MemoryLimit} {
		b, err := readFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, f, fmt.Errorf("read the container's memory limit: %w", err)
		}
		text := strings.TrimSpace(string(b))
		if f == cgroupV2MemoryMax && text == "max" {
			return 0, f, nil
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n <= 0 {
			return 0, f, fmt.Errorf("%s: %q is not a memory limit in bytes", f, text)
		}
		if n >= cgroupV1Unlimited {
			return 0, f, nil
		}
		return n, f, nil
	}
	return 0, "", nil
}

// memoryLimitChoice is what start-up decided about the Go memory limit.
type memoryLimitChoice struct {
	// Limit is the soft limit to set, in bytes; 0 leaves the runtime's
	// (GOMEMLIMIT's, or none) in place.
	Limit int64
	// Source says where the limit came from, for the log line.
	Source string
	// Container is the container's limit when one was read (0 otherwise),
	// logged next to the chosen share.
	Container int64
}

// chooseMemoryLimit decides the Go memory limit. The operator's GOMEMLIMIT
// (given to the runtime, which has already applied it) wins over
// everything; then --memory-limit when not 0; then memoryLimitPercent of
// the container's limit. No limit anywhere leaves the runtime's default
// (none), as before.
func chooseMemoryLimit(flagLimit int64, lookupEnv func(string) (string, bool), readFile func(string) ([]byte, error)) (memoryLimitChoice, error) {
	// The runtime treats an empty GOMEMLIMIT as unset, and so does this.
	if v, ok := lookupEnv("GOMEMLIMIT"); ok && v != "" {
		return memoryLimitChoice{Source: "GOMEMLIMIT"}, nil
	}
	if flagLimit > 0 {
		return memoryLimitChoice{Limit: flagLimit, Source: "--memory-limit"}, nil
	}
	limit, file, err := containerMemoryLimit(readFile)
	if err != nil || limit == 0 {
		return memoryLimitChoice{Source: file}, err
	}
	return memoryLimitChoice{Limit: limit / 100 * memoryLimitPercent, Source: file, Container: limit}, nil
}

// applyMemoryLimit sets the Go memory limit at start-up from
// chooseMemoryLimit and logs the outcome, so an operator can tell from the
// first lines of a node's log which bound its heap has. It runs before the
// Raft log is replayed: with a limit, the collector holds the heap under
// it during the replay too (see releaseMemoryOnceReady).
func applyMemoryLimit(flagLimit int64, lookupEnv func(string) (string, bool), readFile func(string) ([]byte, error), logger *slog.Logger) {
	c, err := chooseMemoryLimit(flagLimit, lookupEnv, readFile)
	if err != nil {
		logger.Warn("could not read the container's memory limit; no Go memory limit set (set --memory-limit)", "err", err)
		return
	}
	switch {
	case c.Source == "GOMEMLIMIT":
		v, _ := lookupEnv("GOMEMLIMIT")
		current := debug.SetMemoryLimit(-1) // -1 reads without changing
		attrs := []any{"gomemlimit", v, "limit", describeMemoryLimit(current)}
		if flagLimit > 0 {
			attrs = append(attrs, "ignored_memory_limit", formatMiB(flagLimit))
		}
		logger.Info("Go memory limit from GOMEMLIMIT, which wins over --memory-limit and the container's limit", attrs...)
	case c.Limit > 0 && c.Container > 0:
		debug.SetMemoryLimit(c.Limit)
		logger.Info(fmt.Sprintf("Go memory limit set to %d%% of the container's memory limit", memoryLimitPercent),
			"limit", formatMiB(c.Limit), "container_limit", formatMiB(c.Container), "from", c.Source)
	case c.Limit > 0:
		debug.SetMemoryLimit(c.Limit)
		logger.Info("Go memory limit set by --memory-limit", "limit", formatMiB(c.Limit))
	default:
		from := c.Source
		if from == "" {
			from = "no cgroup memory file"
		}
		logger.Info("no Go memory limit: the container sets none (set --memory-limit to bound the heap)", "from", from)
	}
}

// describeMemoryLimit renders a runtime memory limit for the log; the
// runtime's "none" is the largest int64.
func describeMemoryLimit(n int64) string {
	if n == math.MaxInt64 {
		return "off"
	}
	return formatMiB(n)
}
