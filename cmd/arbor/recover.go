package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/arbordb/arbor/cluster"
)

// recoverAckFlag is the flag that acknowledges what a recovery costs.
const recoverAckFlag = "--i-understand-acknowledged-writes-may-be-lost"

// runRecover is `arbor recover`: the last-resort, explicit recovery from
// the loss of a quorum (docs/OPERATIONS.md). On a stopped node's data
// directory it replaces the Raft configuration with the given voters, so
// the survivors can elect a leader again; it is logged, recorded in
// <data-dir>/recovery.log and never done without the operator's "yes" or
// the acknowledging flag.
func runRecover(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("arbor recover", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "./arbor-data", "the stopped node's data `directory`")
	nodeID := fs.String("node-id", "", "the node's `id` (as given to arbor serve; required)")
	voters := fs.String("voters", "", "the new voters, `id=host:port,...` with the Raft addresses peers dial; this node included (required)")
	ack := fs.Bool(strings.TrimPrefix(recoverAckFlag, "--"), false, "go on without asking")
	fs.Usage = func() {
		fmt.Fprintf(stderr, `Usage: arbor recover --data-dir D --node-id ID --voters id=host:port[,id=host:port...] [%s]

Last resort after the loss of a quorum: makes the listed voters the whole
cluster on this STOPPED node. Every entry in this node's log counts as
committed; writes only the lost nodes held are gone. Run it on every kept
survivor with the same list, then start them (docs/OPERATIONS.md).

Flags:
`, recoverAckFlag)
		fs.PrintDefaults()
	}
	pos, code, ok := parseToolFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 || *nodeID == "" || *voters == "" {
		fmt.Fprintln(stderr, "arbor recover: --node-id and --voters are required and nothing else may follow the flags")
		return exitUsage
	}
	conf, err := cluster.ParseVoters(*voters)
	if err != nil {
		fmt.Fprintf(stderr, "arbor recover: --voters: %v\n", err)
		return exitUsage
	}
	logger := newLogger(stderr, slog.LevelWarn, "text") // the recovery itself is logged at WARN
	r, err := cluster.OpenRecovery(*dataDir, *nodeID, logger)
	if err != nil {
		fmt.Fprintf(stderr, "arbor recover: %v\n", err)
		return exitFailure
	}
	defer r.Close()
	fmt.Fprintf(stdout, "node %s, data directory %s\n", *nodeID, *dataDir)
	fmt.Fprintf(stdout, "last log entry: index %d, term %d\n", r.LastIndex, r.LastTerm)
	fmt.Fprintln(stdout, "current configuration:")
	for _, s := range cluster.DescribeServers(r.Current) {
		fmt.Fprintf(stdout, "  %s\n", s)
	}
	fmt.Fprintln(stdout, "new configuration:")
	for _, s := range cluster.DescribeServers(conf) {
		fmt.Fprintf(stdout, "  %s\n", s)
	}
	question := "Every entry in this node's log will count as committed; acknowledged writes that only the lost members held will be lost."
	if err := confirm(stdin, stderr, question, *ack, recoverAckFlag); err != nil {
		fmt.Fprintf(stderr, "arbor recover: %v\n", err)
		return exitUsage
	}
	if err := r.Apply(conf, "arbor recover"); err != nil {
		fmt.Fprintf(stderr, "arbor recover: %v\n", err)
		return exitFailure
	}
	if err := r.Close(); err != nil {
		fmt.Fprintf(stderr, "arbor recover: close raft.db: %v\n", err)
		return exitFailure
	}
	fmt.Fprintf(stdout, "recovered: start the node; the record is in %s/%s\n", strings.TrimSuffix(*dataDir, string(os.PathSeparator)), cluster.RecoveryLog)
	return exitOK
}
