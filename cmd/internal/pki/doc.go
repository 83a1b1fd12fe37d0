// Package pki is the key material of an Arbor cluster: the private CA and
// the node certificates it issues, the certificate directory that
// `arbor certs` manages (init, renew, rotate-ca, gossip-key, each a
// function that writes its report to an io.Writer), the self-signed
// certificate of a node started without one, and the gossip key files.
//
// A running node reads all of it through reloaders (CertReloader,
// CAReloader, GossipKeyReloader) that pick up new files without a
// restart and keep what they have when a new file cannot be used, so
// every rotation is a file rollout. NewExpiryCollector exports when the
// certificates in use expire.
//
// Files are replaced atomically (cmd/internal/atomicfile), keys before the
// certificates that name them, so a reader never sees half a rotation.
package pki
