package e2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestDevModeSaysWhetherRulesAreOpen: a --dev node warns that the rules
// are open only while none were ever set; restarted on a data directory
// with rules, it says that they apply and how to reset them, and never
// that the rules are open.
func TestDevModeSaysWhetherRulesAreOpen(t *testing.T) {
	const open = "security rules are open to everyone"
	n := StartReadyNode(t, Options{Args: []string{"--dev"}})
	poll(t, readyTimeout, "the open-rules warning", func() bool { return strings.Contains(n.Logs(), open) },
		func() string { return n.Logs() })
	if r := n.Do(t, "PUT", "/.settings/rules.json", `{"rules":{".read":"auth != null"}}`); r.Status != http.StatusOK {
		t.Fatalf("set rules: %d %s", r.Status, r.Body)
	}
	if code := n.Stop(t); code != 0 {
		t.Fatalf("stop: exit %d", code)
	}
	n.Restart(t)
	n.WaitReady(t)
	poll(t, readyTimeout, "the note that the data directory's rules apply", func() bool {
		return strings.Contains(n.Logs(), "this data directory has security rules")
	}, func() string { return n.Logs() })
	logs := n.Logs()
	if strings.Contains(logs, open) {
		t.Errorf("restarted with rules set, the node still says %q:\n%s", open, logs)
	}
	for _, want := range []string{"/.settings/rules.json", "development node ready: https://localhost:"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if r, _ := n.TryDoWith(n.Client(), "", "GET", "/.json", ""); r.Status != http.StatusUnauthorized {
		t.Errorf("an anonymous read under the data directory's rules: %d, want 401", r.Status)
	}
}
