package realtime

import (
	"crypto/rand"
	"errors"
	"io"
	"log/slog"
	"time"
)

// Config holds a Server's settings. Build one with DefaultConfig and
// change what differs; New checks it with Validate and never changes it
// afterwards.
type Config struct {
	// DatabaseName is the namespace clients must name in ?ns= (the
	// databaseURL's). Empty accepts any namespace: one database per
	// cluster, whatever the apps call it.
	DatabaseName string
	// MaxMessageBytes bounds one client message once its frames are put
	// together (a write's data included); a larger one closes the
	// connection with "message too big".
	MaxMessageBytes int64
	// MaxListens bounds the listens open on one connection; one more is
	// refused with an error status, the others stay.
	MaxListens int
	// MaxDisconnects bounds the onDisconnect registrations (distinct
	// paths) of one connection; one more is refused with an error status.
	MaxDisconnects int
	// MaxOutboundBytes bounds the bytes queued for a client that has not
	// read them yet; a client that lets more pile up is cut off.
	MaxOutboundBytes int64
	// MaxPendingRequests bounds the requests read but not yet answered; a
	// client that sends more waits (the connection is not read meanwhile).
	MaxPendingRequests int
	// WriteTimeout bounds the writing of one message to the client.
	WriteTimeout time.Duration
	// IdleTimeout closes a connection whose client, for this long, sent
	// no message and answered no WebSocket ping (sent after half of it
	// in silence: a client that only listens may never send anything).
	IdleTimeout time.Duration
	// RequestTimeout bounds the handling of one request (a write's
	// replication, a read's barrier).
	RequestTimeout time.Duration
	// OpenIfUnset makes the default rules open before any were set (the
	// --dev node's promise, as over REST).
	OpenIfUnset bool
	// AdminSecrets are the credentials that make a connection an admin
	// (an Admin SDK's gauth), compared in constant time.
	AdminSecrets []string
	// Now is the clock: server time in the hello, server values, token
	// expiry.
	Now func() time.Time
	// Rand supplies session ids and push keys' randomness.
	Rand io.Reader
	// Logger receives the server's log lines.
	Logger *slog.Logger
	// CountSessions, if set, is told of each session that starts (+1)
	// and ends (-1): a gauge of open connections.
	CountSessions func(delta int)
	// CountPanic, if set, is told of each panic recovered in a session
	// (a bug; the session ends, the node goes on).
	CountPanic func()
	// LeaderContact, if set, says when this node was last in touch with
	// its cluster's leader. Once that is FenceAfter ago, the connections
	// holding onDisconnect operations are closed (fence.go).
	LeaderContact func() time.Time
	// FenceAfter is how long this node may be out of touch with a leader
	// before it closes the connections holding onDisconnect operations.
	// It must be shorter than the time the cluster takes to declare a
	// silent node gone and run its operations.
	FenceAfter time.Duration
}

// DefaultConfig returns the settings a node starts with.
func DefaultConfig() Config {
	return Config{
		MaxMessageBytes:    16 << 20,
		MaxListens:         10000,
		MaxDisconnects:     1000,
		MaxOutboundBytes:   8 << 20,
		MaxPendingRequests: 64,
		WriteTimeout:       10 * time.Second,
		IdleTimeout:        2 * time.Minute,
		RequestTimeout:     30 * time.Second,
		FenceAfter:         2 * time.Second,
		Now:                time.Now,
		Rand:               rand.Reader,
		Logger:             slog.New(slog.DiscardHandler),
	}
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.MaxMessageBytes < maxFrameBytes:
		return errors.New("realtime: MaxMessageBytes must be at least one frame (16384 bytes)")
	case c.MaxListens < 1 || c.MaxDisconnects < 1 || c.MaxPendingRequests < 1:
		return errors.New("realtime: MaxListens, MaxDisconnects and MaxPendingRequests must be positive")
	case c.MaxOutboundBytes < maxFrameBytes:
		return errors.New("realtime: MaxOutboundBytes must be at least one frame (16384 bytes)")
	case c.WriteTimeout <= 0 || c.IdleTimeout <= 0 || c.RequestTimeout <= 0:
		return errors.New("realtime: WriteTimeout, IdleTimeout and RequestTimeout must be positive")
	case c.LeaderContact != nil && c.FenceAfter <= 0:
		return errors.New("realtime: FenceAfter must be positive when LeaderContact is set")
	case c.Now == nil || c.Rand == nil || c.Logger == nil:
		return errors.New("realtime: Now, Rand and Logger must be set")
	}
	for _, s := range c.AdminSecrets {
		if s == "" {
			return errors.New("realtime: an admin secret must not be empty")
		}
	}
	return nil
}
