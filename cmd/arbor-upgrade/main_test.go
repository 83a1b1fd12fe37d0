package main

import (
	"io"
	"slices"
	"testing"
)

func TestNextNode(t *testing.T) {
	for _, tc := range []struct {
		remaining []string
		leader    string
		want      string
	}{
		{[]string{"n3", "n2", "n1"}, "n1", "n3"},
		{[]string{"n3", "n2", "n1"}, "n3", "n2"}, // the leader waits
		{[]string{"n3", "n1"}, "n3", "n1"},
		{[]string{"n3"}, "n3", "n3"}, // the leader, last
		{[]string{"n2", "n1"}, "n3", "n2"},
		{[]string{"n2"}, "", "n2"},
	} {
		if got := nextNode(tc.remaining, tc.leader); got != tc.want {
			t.Errorf("nextNode(%v, leader %s) = %s, want %s", tc.remaining, tc.leader, got, tc.want)
		}
	}
}

func TestParseRelease(t *testing.T) {
	rel, err := parseRelease("arbor 1.2.3-4-gabcdef\ncommit: abcdef\n")
	if err != nil || rel != "1.2.3-4-gabcdef" {
		t.Fatalf("parseRelease = %q, %v", rel, err)
	}
	for _, bad := range []string{"", "Arbor 1.2.3", "arbor \n", "something else"} {
		if _, err := parseRelease(bad); err == nil {
			t.Errorf("parseRelease(%q) accepted", bad)
		}
	}
}

func TestParseOptions(t *testing.T) {
	o, err := parseOptions([]string{"-old", "a", "-new", "b", "-clients", "3"}, io.Discard)
	if err != nil || o.OldBin != "a" || o.NewBin != "b" || o.Clients != 3 || o.Docker != "auto" || o.MaxGap.Seconds() != 2 {
		t.Fatalf("parseOptions = %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"-new", "b"},
		{"-old", "a", "-new", "b", "-docker", "maybe"},
		{"-old", "a", "-new", "b", "-rate", "0"},
		{"-old", "a", "-new", "b", "extra"},
	} {
		if _, err := parseOptions(args, io.Discard); err == nil {
			t.Errorf("parseOptions(%v) accepted", args)
		}
	}
}

func TestServeFlagsNameEveryNodeFile(t *testing.T) {
	f := serveFlags(containerServe("n2"), "s")
	for _, want := range []string{"/certs/n2.pem", "/certs/n2-key.pem", "/certs/ca.pem", "/certs/gossip.key", "n1:8301,n3:8301", "3"} {
		if !slices.Contains(f, want) {
			t.Errorf("serve flags %v lack %q", f, want)
		}
	}
}
