package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteUnits are the suffixes parseByteSize accepts: the binary ones of
// GOMEMLIMIT (KiB…TiB), the same without the B as Kubernetes writes
// resource limits (Ki…Ti, so a pod's limit can be copied as is), and the
// decimal ones (K/KB…T/TB). Longest first, so "MiB" is not read as "B".
var byteUnits = []struct {
	suffix string
	size   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
	{"B", 1},
}

// errByteSize is the usage every parseByteSize error carries, so a typo
// is answered with what would have worked.
var errByteSize = errors.New("want a whole number of bytes with an optional unit: B, KiB, MiB, GiB, TiB (or Ki, Mi, Gi, Ti as Kubernetes writes them; K, M, G, T are powers of 1000), e.g. 512MiB or 2Gi")

// parseByteSize reads a size such as "512MiB", "2Gi", "1G" or "1048576".
// Units are case-sensitive, as in Kubernetes, because "m" and "M" differ
// there (milli and mega); a bare number is bytes.
func parseByteSize(s string) (int64, error) {
	text := strings.TrimSpace(s)
	num, mult := text, int64(1)
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(text, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.size
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, errByteSize
	}
	if n > math.MaxInt64/mult {
		return 0, fmt.Errorf("%s is more than %d bytes", s, int64(math.MaxInt64))
	}
	return n * mult, nil
}

// formatMiB renders a byte count for a log line, in MiB to one decimal:
// the unit operators set limits in.
func formatMiB(n int64) string {
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + "MiB"
}
