package main

import (
	"fmt"
	"io"
)

// printUsage lists the commands.
func printUsage(w io.Writer) {
	fmt.Fprint(w, `Arbor is a replicated JSON database with the Firebase Realtime Database REST API.

Usage:
  arbor <command> [flags]

Commands:
  serve     run a node (arbor serve -h lists its flags)
  version   print the release, the commit and the data formats this binary applies
  status    a node's view of the cluster (arbor status --addr host:port --ca ca.pem --auth secret)
  members   list the cluster's members, or remove a failed one (arbor members list|remove <id>)
  certs     a CA, per-host certificates and a gossip key: init, renew, rotate-ca, gossip-key (arbor certs help)
  bench     load-generate against arbor, etcd or a bare handler (arbor bench -h)
  backup    write a consistent export of the whole database to a file (arbor backup --out file.json)
  restore   replace the whole database with a backup (arbor restore --in file.json)
  token     an ID token for development: arbor token --uid alice [--claims '{"admin":true}'] [--expires 1h]
  recover   last resort after losing a quorum: make the survivors the whole cluster (arbor recover -h)
  help      print this help (arbor help serve: the serve flags)
`)
}
