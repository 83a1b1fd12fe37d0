package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/arbordb/arbor/fsm"
)

// The formats the run must cross are those this tree writes that the
// reference, the last release (RELEASES at the repository's root), does
// not apply (cluster/formats.go, cluster/DESIGN.md "Versions and rolling
// upgrades"). Entry format 1 and snapshot format 1 are those of v0.1.0,
// the first release; format 2 of both holds the replicated onDisconnect
// operations: while mixed, an upgraded node answers them "unavailable"
// (presence.go), and once upgraded one is registered, carried by a
// snapshot of format 2 across a restart and run. The run reads the reference's formats from its /status
// (oldFormats) rather than assuming them: when the reference applies
// fewer entry formats than the rules entry needs, the mixed cluster must
// hold the rules back (gate.go); otherwise those checks are reported as
// skipped, and the rest — the load, snapshots restored across the step,
// rules and judged writes once every node is upgraded, a large write as
// one entry, a restart from a snapshot with the rules — still run.

// formatsToCross names the formats this tree writes that a reference
// applying up to entry format oldEntry and snapshot format oldSnapshot
// does not ("" when there are none).
func formatsToCross(oldEntry, oldSnapshot int) string {
	var out []string
	if newEntry := fsm.CommandVersion; oldEntry < newEntry {
		out = append(out, fmt.Sprintf("entry formats %d to %d", oldEntry+1, newEntry))
	}
	if newSnap := fsm.SnapshotVersion; oldSnapshot < newSnap {
		out = append(out, fmt.Sprintf("snapshot formats %d to %d", oldSnapshot+1, newSnap))
	}
	return strings.Join(out, ", ")
}

// formatCheck is one verdict on crossing those formats.
type formatCheck struct {
	// Phase says when: the mixed cluster after a step, the upgraded
	// cluster under load, the quiet cluster at the end, or a step.
	Phase string
	What  string
	OK    bool
	// Skipped says the phase could not try it (OK stays true).
	Skipped bool
	// Detail is what was seen, or what went wrong.
	Detail string
	// At is when the check ended, on the run's clock (the load's).
	At time.Duration
}

// crossed records a format check: a pass with detail when err is nil,
// else a failure of the run.
func (r *result) crossed(phase, what, detail string, err error) {
	c := formatCheck{Phase: phase, What: what, OK: err == nil, Detail: detail, At: r.now()}
	if err != nil {
		c.Detail = err.Error()
		r.fail("%s: %s: %v", phase, what, err)
	}
	r.Formats = append(r.Formats, c)
}

// note records what a phase could not check, without failing the run.
func (r *result) skipped(phase, what, why string) {
	r.Formats = append(r.Formats, formatCheck{Phase: phase, What: what, OK: true, Skipped: true, Detail: why, At: r.now()})
}

// now is the run's clock, 0 before the load started.
func (r *result) now() time.Duration {
	if r.clock == nil {
		return 0
	}
	return r.clock()
}

// formatsRoot holds every key these checks write, apart from the
// workload's keys.
const formatsRoot = "/upgrade-formats"

// rulesMarker is in the rules this test writes, not in any default rules.
const rulesMarker = "upgrade-formats"

// rulesSource are the rules the test sets: a user writes only a string to
// their own key under judged/. The comment must come back as written.
const rulesSource = `{
  // arbor-upgrade: set once every member runs the new release
  "rules": {
    "upgrade-formats": {
      "judged": {
        "$uid": {
          ".write": "auth != null && auth.uid == $uid",
          ".validate": "newData.isString()"
        }
      }
    }
  }
}
`

// The answers the design documents: a kind some member cannot apply yet
// is a 503 with this message and Retry-After: 1, nothing written
// (httpapi/errors.go, docs/OPERATIONS.md); a write the rules refuse is a
// 401 with the other.
const (
	msgNotReady   = "Service unavailable: not ready"
	msgPermission = "Permission denied"
)

// Sizes of the large writes: over 1 MiB, and well under the limit of one
// write (cluster.MaxWriteBytes) and the default write size limit (16 MiB)
// of both releases.
const (
	mixedLargeBytes    = 5 << 19 // 2.5 MiB
	upgradedLargeBytes = 7 << 19 // 3.5 MiB
)

// largeValue is a string of exactly n bytes that starts with tag, so
// each large write has its own content.
func largeValue(tag string, n int) string {
	const pattern = "abcdefghijklmnopqrstuvwxyz0123456789-_ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var b strings.Builder
	b.Grow(n)
	b.WriteString(tag)
	b.WriteByte('|')
	for b.Len() < n {
		b.WriteString(pattern[:min(len(pattern), n-b.Len())])
	}
	return b.String()[:n]
}

// jsonString is s as a JSON text.
func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// errorMessage is the "error" of an error body, or the body itself.
func errorMessage(body []byte) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		return e.Error
	}
	return strings.TrimSpace(string(body))
}

// asUser is the query that makes an admin request act as uid (SPEC §8,
// auth_variable_override): judged by the rules like uid's own writes.
func asUser(uid string) string {
	return "auth_variable_override=" + url.QueryEscape(fmt.Sprintf(`{"uid":%q}`, uid))
}

// readString reads path (without .json) from node, linearizably: nil for
// null, else the string stored there.
func (c adminClient) readString(ctx context.Context, node, path string) (*string, error) {
	code, body, err := c.do(ctx, node, http.MethodGet, path+".json", "")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %d %s", path, code, errorMessage(body))
	}
	var v *string
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, fmt.Errorf("GET %s: not a string or null (%d bytes): %w", path, len(body), err)
	}
	return v, nil
}

// sameEverywhere reads path from every node and fails unless each holds
// want (nil: nothing).
func (c adminClient) sameEverywhere(ctx context.Context, path string, want *string) error {
	for _, id := range nodes {
		got, err := c.readString(ctx, id, path)
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", id, err)
		case want == nil && got != nil:
			return fmt.Errorf("%s holds %d bytes at %s, want nothing", id, len(*got), path)
		case want != nil && got == nil:
			return fmt.Errorf("%s holds nothing at %s, want %d bytes", id, path, len(*want))
		case want != nil && *got != *want:
			return fmt.Errorf("%s holds other content at %s (%d bytes, want %d)", id, path, len(*got), len(*want))
		}
	}
	return nil
}

// putRetrying PUTs body at path (with .json and its query) through node,
// again after each 503 (nothing written, or a PUT of the same body
// again) until a deadline. It returns the last answer and the attempts.
func (c adminClient) putRetrying(ctx context.Context, node, path, body string, timeout time.Duration) (int, []byte, int, error) {
	var (
		code     int
		answer   []byte
		attempts int
	)
	err := poll(ctx, timeout, "PUT "+path+" through "+node, func(ctx context.Context) error {
		attempts++
		var err error
		code, answer, err = c.do(ctx, node, http.MethodPut, path, body)
		switch {
		case err != nil:
			return err
		case code == http.StatusServiceUnavailable:
			return fmt.Errorf("503 %s", errorMessage(answer))
		}
		return nil
	})
	return code, answer, attempts, err
}

// getRules reads /.settings/rules.json from node.
func (c adminClient) getRules(ctx context.Context, node string) (string, error) {
	code, body, err := c.do(ctx, node, http.MethodGet, "/.settings/rules.json", "")
	switch {
	case err != nil:
		return "", err
	case code != http.StatusOK:
		return "", fmt.Errorf("GET /.settings/rules.json: %d %s", code, errorMessage(body))
	}
	return string(body), nil
}

// errUnexpected builds the error of an answer other than the one wanted.
func errUnexpected(what string, code int, body []byte, want string) error {
	return fmt.Errorf("%s: %d %q, want %s", what, code, errorMessage(body), want)
}
