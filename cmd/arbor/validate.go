package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/arbordb/arbor/cluster"
	"github.com/arbordb/arbor/cmd/internal/pki"
	"github.com/arbordb/arbor/httpapi"
	"github.com/prometheus/client_golang/prometheus"
)

// validate checks every setting, so that a mistake stops the process
// before it touches the data directory, with a message naming the flag.
func (c *serveConfig) validate() error {
	if c.NodeID == "" {
		return errors.New("--node-id: must not be empty (the host name is the default, but it could not be read)")
	}
	if c.DataDir == "" {
		return errors.New("--data-dir: must not be empty")
	}
	for _, a := range []struct{ flag, value string }{
		{"--http-addr", c.HTTPAddr}, {"--raft-addr", c.RaftAddr}, {"--gossip-addr", c.GossipAddr},
	} {
		if err := checkListenAddr(a.value); err != nil {
			return fmt.Errorf("%s %q: %w", a.flag, a.value, err)
		}
	}
	if strings.ContainsAny(c.AdvertiseHost, ":/") && net.ParseIP(c.AdvertiseHost) == nil {
		return fmt.Errorf("--advertise-host %q: want a host name or IP address, without a port", c.AdvertiseHost)
	}
	if c.BootstrapExpect < 1 {
		return fmt.Errorf("--bootstrap-expect %d: must be at least 1", c.BootstrapExpect)
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key: give both or neither")
	}
	if c.ReapAfter < 0 {
		return fmt.Errorf("--reap-after %s: must not be negative (0 never reaps)", c.ReapAfter)
	}
	if err := c.validateSecurityFiles(); err != nil {
		return err
	}
	if err := c.validateClusterSecurity(); err != nil {
		return err
	}
	for _, s := range c.AdminSecrets {
		if s == "" {
			return errors.New("--admin-secret: must not be empty")
		}
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		return fmt.Errorf("--log-format %q: want text or json", c.LogFormat)
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug":
		c.level = slog.LevelDebug
	case "info":
		c.level = slog.LevelInfo
	case "warn", "warning":
		c.level = slog.LevelWarn
	case "error":
		c.level = slog.LevelError
	default:
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	if c.RaftTimeout < cluster.MinRaftTimeout || c.RaftTimeout > cluster.MaxRaftTimeout {
		return fmt.Errorf("--raft-timeout %s: want %s to %s", c.RaftTimeout, cluster.MinRaftTimeout, cluster.MaxRaftTimeout)
	}
	if c.SnapshotInterval < 10*time.Millisecond {
		return fmt.Errorf("--snapshot-interval %s: want at least 10ms", c.SnapshotInterval)
	}
	if c.VoterStabilization < 0 {
		return fmt.Errorf("--voter-stabilization %s: must not be negative", c.VoterStabilization)
	}
	if c.WriteTimeout <= 0 {
		return fmt.Errorf("--write-timeout %s: must be positive", c.WriteTimeout)
	}
	if c.ShutdownTimeout <= 0 {
		return fmt.Errorf("--shutdown-timeout %s: must be positive", c.ShutdownTimeout)
	}
	if c.StreamKeepAlive <= 0 {
		return fmt.Errorf("--stream-keepalive %s: must be positive", c.StreamKeepAlive)
	}
	if c.MaxTokenLifetime <= 0 {
		return fmt.Errorf("--max-token-lifetime %s: must be positive", c.MaxTokenLifetime)
	}
	if c.MaxConnections < 0 {
		return fmt.Errorf("--max-connections %d: must be 0 (automatic) or positive", c.MaxConnections)
	}
	if c.MaxWritesInProgress <= 0 {
		return fmt.Errorf("--max-writes-in-progress %d: must be positive", c.MaxWritesInProgress)
	}
	if err := c.validateMemoryLimit(); err != nil {
		return err
	}
	if c.SnapshotThreshold == 0 {
		return errors.New("--snapshot-threshold: must be at least 1")
	}
	// The HTTP API owns these names; it is asked about each alone, so
	// that the message can name the flag.
	if (httpapi.Config{DefaultConsistency: c.DefaultReadConsistency}).Validate() != nil {
		return fmt.Errorf("--default-read-consistency %q: want linearizable or local", c.DefaultReadConsistency)
	}
	if (httpapi.Config{DefaultWriteSizeLimit: c.DefaultWriteSizeLimit}).Validate() != nil {
		return fmt.Errorf("--default-write-size-limit %q: want tiny, small, medium, large or unlimited", c.DefaultWriteSizeLimit)
	}
	if (httpapi.Config{DatabaseName: c.DatabaseName}).Validate() != nil {
		return fmt.Errorf("--database-name %q: want lowercase letters, digits and '-', at most 63, starting with a letter or digit", c.DatabaseName)
	}
	// The components own the rules for their own settings (Raft bounds);
	// ask them now rather than after the data directory is opened.
	discard := slog.New(slog.DiscardHandler)
	cc := c.clusterConfig(discard)
	if c.TLSCA != "" {
		// The real TLS settings need the loaded certificate; serve builds
		// them. A stand-in lets the cluster check everything else now.
		cc.TLS = &cluster.TLSConfig{Roots: cluster.StaticRoots(x509.NewCertPool()), Certificate: func() (*tls.Certificate, error) {
			return nil, errors.New("not loaded yet")
		}}
	}
	if err := cc.Validate(); err != nil {
		return err
	}
	return c.httpConfig(discard, prometheus.NewRegistry()).Validate()
}

// validateMemoryLimit parses --memory-limit into c.memoryLimit: 0 (the
// container's limit decides) or a size the collector can live with.
func (c *serveConfig) validateMemoryLimit() error {
	n, err := parseByteSize(c.MemoryLimit)
	if err != nil {
		return fmt.Errorf("--memory-limit %q: %w, or 0 for %d%% of the container's memory limit", c.MemoryLimit, err, memoryLimitPercent)
	}
	if n != 0 && n < minMemoryLimit {
		return fmt.Errorf("--memory-limit %q: want 0 (from the container) or at least %s; below that the garbage collector would run all the time", c.MemoryLimit, formatMiB(minMemoryLimit))
	}
	c.memoryLimit = n
	return nil
}

// validateClusterSecurity applies SPEC §7: nodes talk to each other over
// mutual TLS and encrypted gossip, and a multi-node cluster without them
// refuses to start unless the operator says --insecure-cluster. A
// multi-node cluster also needs an address its peers can reach.
func (c *serveConfig) validateClusterSecurity() error {
	if c.TLSCA != "" && c.TLSCert == "" {
		return errors.New("--tls-ca: also give --tls-cert and --tls-key, this node's certificate signed by that CA (arbor certs init writes them)")
	}
	if !c.multiNode() {
		return nil
	}
	var missing []string
	if c.TLSCA == "" {
		missing = append(missing, "--tls-ca (with --tls-cert and --tls-key)")
	}
	if len(c.GossipKeys) == 0 {
		missing = append(missing, "--gossip-key")
	}
	if len(missing) == 0 || c.InsecureCluster {
		return c.validateAdvertise()
	}
	return fmt.Errorf("a multi-node cluster (--bootstrap-expect %d, --join %q) needs %s to secure the traffic between nodes; "+
		"`arbor certs init --dir D --hosts h1,h2,h3` writes them. To run without, set --insecure-cluster",
		c.BootstrapExpect, strings.Join(c.Join, ","), strings.Join(missing, " and "))
}

// validateAdvertise requires, for a multi-node cluster, an address peers
// can use: Raft advertises the bind address, or 127.0.0.1 for one that
// listens on every interface, which only works on a single machine.
func (c *serveConfig) validateAdvertise() error {
	if c.AdvertiseHost != "" {
		return nil
	}
	if host, _, _ := net.SplitHostPort(c.RaftAddr); host == "" || net.ParseIP(host).IsUnspecified() {
		return fmt.Errorf("--advertise-host: a multi-node cluster needs the name or IP peers reach this node at, since --raft-addr %s listens on every interface", c.RaftAddr)
	}
	return nil
}

// validateSecurityFiles checks the key material that other nodes and
// clients will depend on, so a typo fails now rather than at the first
// connection.
func (c *serveConfig) validateSecurityFiles() error {
	if c.TLSCert != "" {
		if _, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey); err != nil {
			return fmt.Errorf("--tls-cert %s and --tls-key %s: %w", c.TLSCert, c.TLSKey, err)
		}
	}
	if c.TLSCA != "" {
		if err := pki.CheckCAFile(c.TLSCA); err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
	}
	if c.TLSCA != "" && c.TLSCert != "" {
		if err := pki.CheckSignedBy(c.TLSCert, c.TLSCA); err != nil {
			return fmt.Errorf("--tls-cert %s: %w", c.TLSCert, err)
		}
	}
	if _, err := pki.DecodeGossipKeys(c.GossipKeys); err != nil {
		return fmt.Errorf("--gossip-key: %w", err)
	}
	for _, s := range c.JWTHS256Secrets {
		if len(s) < 16 {
			return errors.New("--jwt-hs256-secret: must be at least 16 bytes (a short secret can be guessed offline from any token)")
		}
	}
	if _, err := c.tokenVerifier(); err != nil {
		return err
	}
	return nil
}

// checkListenAddr accepts host:port with an empty host (all interfaces)
// and port 0 (any free port).
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want host:port: %w", err)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	return nil
}
