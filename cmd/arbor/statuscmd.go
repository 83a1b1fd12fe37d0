package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/arbordb/arbor/cluster"
)

// runStatus is `arbor status`: one node's view of the cluster.
func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("arbor status", flag.ContinueOnError)
	var cf clientFlags
	cf.bind(fs)
	asJSON := fs.Bool("json", false, "print the node's /status JSON as is")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: arbor status [--addr host:port] [--ca ca.pem] [--auth secret] [--json]\n\nShows a node's role, leader, indexes and the cluster's members.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, code, ok := parseToolFlags(fs, args, stderr)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return usageMistake(stderr, "arbor status", "unexpected argument %q", pos[0])
	}
	c, err := cf.client()
	if err != nil {
		fmt.Fprintf(stderr, "arbor status: %v\n", err)
		return exitUsage
	}
	var raw json.RawMessage
	if err := c.do("GET", "/status", &raw); err != nil {
		fmt.Fprintf(stderr, "arbor status: %s: %v\n", cf.addr, err)
		return exitFailure
	}
	if *asJSON {
		fmt.Fprintf(stdout, "%s\n", raw)
		return exitOK
	}
	var st cluster.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		fmt.Fprintf(stderr, "arbor status: decode the answer: %v\n", err)
		return exitFailure
	}
	ready := "ready"
	if !st.Ready {
		ready = "NOT READY: " + st.Health
	}
	fmt.Fprintf(stdout, "node %s: %s, %s\n", st.NodeID, st.Role, ready)
	fmt.Fprintf(stdout, "leader: %s   term: %d   commit: %d   applied: %d   formats: entry %d, snapshot %d\n",
		orDash(st.Leader), st.Term, st.CommitIndex, st.AppliedIndex, st.Versions.EntryFormat, st.Versions.SnapshotFormat)
	if st.Snapshot != nil {
		fmt.Fprintf(stdout, "last snapshot: index %d (installed from the leader since start: %d)\n", st.Snapshot.Index, st.SnapshotsInstalled)
	}
	fmt.Fprintln(stdout)
	printMembers(stdout, st.Members)
	return exitOK
}

// runMembers is `arbor members list|remove <id>`.
func runMembers(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("arbor members", flag.ContinueOnError)
	var cf clientFlags
	cf.bind(fs)
	asJSON := fs.Bool("json", false, "list: print the JSON as is")
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage:
  arbor members list   [flags]       the members, their addresses, health and versions
  arbor members remove <id> [flags]  remove a failed member (an alive one must be stopped first)

Flags:
`)
		fs.PrintDefaults()
	}
	pos, code, ok := parseToolFlags(fs, args, stderr)
	if !ok {
		return code
	}
	switch {
	case len(pos) == 0:
		return usageMistake(stderr, "arbor members", "want a subcommand: list, or remove <id>")
	case pos[0] != "list" && pos[0] != "remove":
		return usageMistake(stderr, "arbor members", "unknown subcommand %q: want list, or remove <id>", pos[0])
	case pos[0] == "list" && len(pos) != 1:
		return usageMistake(stderr, "arbor members", "unexpected argument %q after list", pos[1])
	case pos[0] == "remove" && len(pos) != 2:
		return usageMistake(stderr, "arbor members", "remove takes one member id: arbor members remove <id>")
	}
	c, err := cf.client()
	if err != nil {
		fmt.Fprintf(stderr, "arbor members: %v\n", err)
		return exitUsage
	}
	if pos[0] == "remove" {
		if err := c.do("DELETE", "/members?id="+url.QueryEscape(pos[1]), nil); err != nil {
			fmt.Fprintf(stderr, "arbor members remove %s: %v\n", pos[1], err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "removed %s\n", pos[1])
		return exitOK
	}
	var raw json.RawMessage
	if err := c.do("GET", "/members", &raw); err != nil {
		fmt.Fprintf(stderr, "arbor members list: %s: %v\n", cf.addr, err)
		return exitFailure
	}
	if *asJSON {
		fmt.Fprintf(stdout, "%s\n", raw)
		return exitOK
	}
	var ms []cluster.Member
	if err := json.Unmarshal(raw, &ms); err != nil {
		fmt.Fprintf(stderr, "arbor members list: decode the answer: %v\n", err)
		return exitFailure
	}
	printMembers(stdout, ms)
	return exitOK
}

// printMembers writes the members as a table.
func printMembers(w io.Writer, ms []cluster.Member) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tRAFT ADDRESS\tSUFFRAGE\tHEALTH\tAPPLIED\tLAG\tLAST CONTACT\tFORMATS\tROLE")
	for _, m := range ms {
		formats := "?"
		if m.Versions != nil {
			formats = fmt.Sprintf("entry %d, snapshot %d", m.Versions.EntryFormat, m.Versions.SnapshotFormat)
		}
		var role []string
		if m.Leader {
			role = append(role, "leader")
		}
		if m.Self {
			role = append(role, "(this node)")
		}
		applied, lag, contact := progressColumns(m)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.ID, orDash(m.Address), strings.ToLower(m.Suffrage), m.Health,
			applied, lag, contact, formats, strings.Join(role, " "))
	}
	tw.Flush()
}

// progressColumns are a member's applied index, lag and last contact as
// the leader sees them ("-" where unknown; "stale" when the leader has not
// heard from it lately).
func progressColumns(m cluster.Member) (applied, lag, contact string) {
	applied, lag, contact = "-", "-", "-"
	p := m.Progress
	if p == nil {
		return applied, lag, contact
	}
	if p.AppliedIndex != nil && p.Lag != nil {
		applied, lag = fmt.Sprint(*p.AppliedIndex), fmt.Sprint(*p.Lag)
	}
	switch {
	case m.Leader:
		contact = "leader"
	case p.LastContactMS != nil:
		contact = (time.Duration(*p.LastContactMS) * time.Millisecond).String() + " ago"
	}
	switch {
	case p.Stale && contact == "-":
		contact = "stale"
	case p.Stale:
		contact = "stale, " + contact
	}
	return applied, lag, contact
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
