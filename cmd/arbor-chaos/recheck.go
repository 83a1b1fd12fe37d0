package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/nemesis"
	"github.com/arbordb/arbor/cmd/arbor-chaos/internal/report"
	"github.com/arbordb/arbor/cmd/internal/history"
	"github.com/arbordb/arbor/cmd/internal/model"
)

// recheck judges a saved history again (arbor-chaos -check FILE): the
// history-only checks, porcupine, with visualizations next to the file,
// and the stream checks when the run's watchers.json is there too. No
// cluster is started.
func recheck(cfg config, out io.Writer) int {
	ops, err := history.ReadFile(cfg.Check)
	if err != nil {
		fmt.Fprintln(out, "arbor-chaos:", err)
		return exitSetup
	}
	nodes := map[string]bool{}
	for _, op := range ops {
		if op.Final {
			nodes[op.Node] = true
		}
	}
	dir := filepath.Dir(cfg.Check)
	// The faults, if the run's events.json lies next to the history.
	var events []nemesis.Event
	if b, err := os.ReadFile(filepath.Join(dir, "events.json")); err == nil {
		if err := json.Unmarshal(b, &events); err != nil {
			fmt.Fprintln(out, "arbor-chaos: events.json:", err)
		}
	}
	sum := report.Summary{
		Events:  events,
		Replay:  "arbor-chaos -check " + cfg.Check,
		Backend: "none (saved history)",
		Dir:     dir,
		Faults:  []nemesis.Fault{},
		Ops:     ops,
		Linear:  model.Check(ops, model.Options{Timeout: cfg.CheckTimeout, VizDir: filepath.Join(dir, "viz")}),
		Checks:  historyChecks(ops, len(nodes)),
	}
	// The streams, if the run's watchers.json lies next to the history.
	streams, err := loadWatchers(dir)
	if err != nil {
		fmt.Fprintln(out, "arbor-chaos:", err)
		return exitSetup
	}
	figures, results := streamChecks(ops, streams)
	sum.Streams, sum.Checks = figures, append(sum.Checks, results...)
	sum.Write(out)
	if sum.Pass() {
		return exitPass
	}
	return exitFail
}
