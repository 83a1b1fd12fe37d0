package httpapi

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/arbordb/arbor/httpapi/idtoken"
)

// Read consistency levels (SPEC §9), as accepted by ?consistency= and
// Config.DefaultConsistency.
const (
	ConsistencyLinearizable = "linearizable"
	ConsistencyLocal        = "local"
)

// writeSizeLimits maps ?writeSizeLimit= names to the bytes a single request
// may write or remove (SPEC §3).
var writeSizeLimits = map[string]int64{
	"tiny":      64 << 10,
	"small":     1 << 20,
	"medium":    16 << 20,
	"large":     64 << 20,
	"unlimited": 256 << 20,
}

// databaseName is what a database's name may be: a Firebase namespace,
// the first label of its host name.
var databaseName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// Config configures a Server. Build it with DefaultConfig and change what
// you need; New copies it, so changing it afterwards has no effect.
type Config struct {
	// AdminSecrets are tokens that are admin (they bypass rules).
	AdminSecrets []string
	// Dev makes the rules open until some are set, and accepts `Bearer
	// owner` as an admin.
	Dev bool
	// Tokens verifies ID tokens (JWTs) whose claims become the rules'
	// `auth`; nil accepts none.
	Tokens *idtoken.Verifier
	// DefaultConsistency is the read consistency when a request names none:
	// "linearizable" (the default) or "local".
	DefaultConsistency string
	// DefaultWriteSizeLimit is the write size limit when a request names
	// none: tiny, small, medium (the default), large or unlimited.
	DefaultWriteSizeLimit string
	// WriteTimeout bounds how long a write, or a linearizable read, waits
	// for the cluster before answering 503 (default 5s).
	WriteTimeout time.Duration
	// Logger receives internal errors and panics (default slog.Default()).
	Logger *slog.Logger
	// Registerer is where request metrics are registered; nil means a
	// private registry.
	Registerer prometheus.Registerer
	// Gatherer is what /metrics serves; nil means the Registerer when it can
	// gather, else the private registry or prometheus.DefaultGatherer.
	Gatherer prometheus.Gatherer
	// Now is the clock for server timestamps and push keys (default time.Now).
	Now func() time.Time
	// Rand is the randomness for push keys (default crypto/rand).
	Rand io.Reader
	// StreamKeepAlive is how long a quiet stream waits before a keep-alive
	// frame (default 30s).
	StreamKeepAlive time.Duration
	// StreamBufferBytes bounds the frames queued for one stream; a
	// subscriber that falls further behind is cancelled (default 8 MiB).
	StreamBufferBytes int
	// DatabaseName is the name realtime-protocol clients must give in
	// ?ns= (their databaseURL's); empty accepts any (--database-name).
	DatabaseName string
	// MaxBodyBytes caps a write's body whatever its write size limit
	// (0: no cap); the server sets it from the largest replicated write.
	MaxBodyBytes int64
	// RenderBudgetBytes bounds the bytes of large answers (1 MiB or more)
	// rendered at once (default 64 MiB; renderbudget.go).
	RenderBudgetBytes int64
	// StrictIndexes refuses, like Firebase, an orderByChild or
	// orderByValue query whose `.indexOn` the rules in force do not
	// declare at its path (400 `Index not defined…`); otherwise such a
	// query is answered by scanning the children (--strict-indexes).
	StrictIndexes bool
	// MaxWritesInProgress bounds the client writes this node proposes at
	// once; more wait for a slot, connection by connection in turn
	// (default 64; fairgate.go).
	MaxWritesInProgress int
	// NodeID and RunID name this node (its Raft server id) and this run
	// of its process (fresh at each start): the realtime protocol's
	// onDisconnect operations are registered to them (presence.go).
	// Empty: "local", and a random run id.
	NodeID, RunID string
	// LeaderContact, if set, says when this node was last in touch with
	// its cluster's leader: out of touch for long, it closes the realtime
	// connections holding onDisconnect operations (realtime/fence.go).
	LeaderContact func() time.Time
}

// DefaultConfig returns the configuration of a production node without
// admin secrets.
func DefaultConfig() Config {
	return Config{
		DefaultConsistency:    ConsistencyLinearizable,
		DefaultWriteSizeLimit: "medium",
		WriteTimeout:          5 * time.Second,
		Logger:                slog.Default(),
		Now:                   time.Now,
		Rand:                  rand.Reader,
		StreamKeepAlive:       30 * time.Second,
		StreamBufferBytes:     8 << 20,
		RenderBudgetBytes:     64 << 20,
		MaxWritesInProgress:   64,
	}
}

// Validate reports the first invalid setting. Zero values are valid: New
// replaces them with the defaults of DefaultConfig.
func (c Config) Validate() error {
	for i, s := range c.AdminSecrets {
		if s == "" {
			// An empty secret would make every request without credentials admin.
			return fmt.Errorf("httpapi: admin secret %d is empty", i)
		}
	}
	switch c.DefaultConsistency {
	case "", ConsistencyLinearizable, ConsistencyLocal:
	default:
		return fmt.Errorf("httpapi: default consistency %q: want %q or %q",
			c.DefaultConsistency, ConsistencyLinearizable, ConsistencyLocal)
	}
	if _, ok := writeSizeLimits[c.DefaultWriteSizeLimit]; !ok && c.DefaultWriteSizeLimit != "" {
		return fmt.Errorf("httpapi: default write size limit %q: want tiny, small, medium, large or unlimited",
			c.DefaultWriteSizeLimit)
	}
	if c.WriteTimeout < 0 {
		return errors.New("httpapi: write timeout must not be negative")
	}
	if c.DatabaseName != "" && !databaseName.MatchString(c.DatabaseName) {
		return fmt.Errorf("httpapi: database name %q: want lowercase letters, digits and '-'", c.DatabaseName)
	}
	if c.StreamKeepAlive < 0 || c.StreamBufferBytes < 0 || c.RenderBudgetBytes < 0 || c.MaxBodyBytes < 0 {
		return errors.New("httpapi: stream keep-alive and buffer must not be negative")
	}
	if c.MaxWritesInProgress < 0 {
		return errors.New("httpapi: writes in progress must not be negative")
	}
	return nil
}

// withDefaults returns c with every zero field replaced by its default.
func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.DefaultConsistency == "" {
		c.DefaultConsistency = d.DefaultConsistency
	}
	if c.DefaultWriteSizeLimit == "" {
		c.DefaultWriteSizeLimit = d.DefaultWriteSizeLimit
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = d.WriteTimeout
	}
	if c.Logger == nil {
		c.Logger = d.Logger
	}
	if c.Now == nil {
		c.Now = d.Now
	}
	if c.Rand == nil {
		c.Rand = d.Rand
	}
	if c.StreamKeepAlive == 0 {
		c.StreamKeepAlive = d.StreamKeepAlive
	}
	if c.StreamBufferBytes == 0 {
		c.StreamBufferBytes = d.StreamBufferBytes
	}
	if c.RenderBudgetBytes == 0 {
		c.RenderBudgetBytes = d.RenderBudgetBytes
	}
	if c.MaxWritesInProgress == 0 {
		c.MaxWritesInProgress = d.MaxWritesInProgress
	}
	if c.Registerer == nil {
		reg := prometheus.NewRegistry()
		c.Registerer = reg
		if c.Gatherer == nil {
			c.Gatherer = reg
		}
	}
	if c.Gatherer == nil {
		if g, ok := c.Registerer.(prometheus.Gatherer); ok {
			c.Gatherer = g
		} else {
			c.Gatherer = prometheus.DefaultGatherer
		}
	}
	c.AdminSecrets = append([]string(nil), c.AdminSecrets...)
	return c
}
