package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/httpapi/idtoken"
	"github.com/arbordb/arbor/httpapi/realtime"
)

// newRealtime builds the realtime protocol's server (/.ws) over the same
// DB, hub, token verifier, admin secrets and rules as REST.
func (s *Server) newRealtime() (*realtime.Server, error) {
	cfg := realtime.DefaultConfig()
	cfg.DatabaseName = s.cfg.DatabaseName
	cfg.MaxMessageBytes = max(cfg.MaxMessageBytes, s.cfg.MaxBodyBytes)
	cfg.MaxOutboundBytes = max(int64(s.cfg.StreamBufferBytes), maxFrameBytes) // as a stream's queue
	cfg.OpenIfUnset = s.cfg.Dev
	cfg.AdminSecrets = s.cfg.AdminSecrets
	cfg.Now = s.cfg.Now
	cfg.Rand = lockedReader{s}
	cfg.Logger = s.log
	cfg.LeaderContact = s.cfg.LeaderContact
	disconnects, err := s.newDisconnects()
	if err != nil {
		return nil, err
	}
	cfg.CountSessions = func(d int) { s.metrics.realtimeConns.Add(float64(d)) }
	cfg.CountPanic = s.metrics.panics.Inc
	var tokens realtime.Tokens = noTokens{}
	if s.tokens != nil {
		tokens = realtimeTokens{s.tokens}
	}
	rt, err := realtime.New(cfg, realtime.Deps{
		DB:          s.db,
		Events:      realtimeEvents{s},
		Tokens:      tokens,
		Disconnects: disconnects,
	})
	if err != nil {
		return nil, fmt.Errorf("httpapi: realtime protocol: %w", err)
	}
	disconnects.closeSession = rt.CloseSession
	s.disconnects = disconnects
	return rt, nil
}

// newDisconnects keeps onDisconnect operations as replicated state,
// registered to this node and run.
func (s *Server) newDisconnects() (*replicatedDisconnects, error) {
	d := &replicatedDisconnects{db: s.db, node: s.cfg.NodeID, run: s.cfg.RunID, now: s.cfg.Now, rand: lockedReader{s}, log: s.log}
	if d.node == "" {
		d.node = "local"
	}
	if d.run == "" {
		// Not from Config.Rand: that is the push keys' randomness, which
		// tests make deterministic.
		var b [8]byte
		if _, err := io.ReadFull(rand.Reader, b[:]); err != nil {
			return nil, fmt.Errorf("httpapi: run id: %w", err)
		}
		d.run = hex.EncodeToString(b[:])
	}
	return d, nil
}

// maxFrameBytes is the least outbound bound the realtime server takes:
// one frame.
const maxFrameBytes = 16 << 10

// realtimeRoutes mounts the realtime protocol beside the REST API.
func (s *Server) realtimeRoutes(e *gin.Engine) {
	e.GET("/.ws", gin.WrapH(s.rt))
	e.Any("/.lp", gin.WrapH(realtime.LongPoll()))
}

// realtimeTokens is the ID-token verifier as the realtime protocol uses it.
type realtimeTokens struct{ v *idtoken.Verifier }

// Verify implements realtime.Tokens.
func (t realtimeTokens) Verify(token string) (realtime.Identity, error) {
	tok := idtoken.NewToken(token)
	id, ok := t.v.Cached(tok)
	if !ok {
		var err error
		if id, err = t.v.VerifyToken(tok); err != nil {
			if errors.Is(err, idtoken.ErrExpired) {
				return realtime.Identity{}, fmt.Errorf("%w: %w", realtime.ErrExpiredToken, err)
			}
			return realtime.Identity{}, err
		}
	}
	claims, _ := id.Auth["token"].(map[string]any)
	return realtime.Identity{Auth: id.Auth, AuthJSON: id.AuthJSON, Claims: claims, Expires: id.Expires}, nil
}

// noTokens refuses every ID token: the node verifies none.
type noTokens struct{}

// Verify implements realtime.Tokens.
func (noTokens) Verify(string) (realtime.Identity, error) {
	return realtime.Identity{}, errors.New("this node accepts no ID tokens (no key is configured)")
}

// lockedReader serialises reads of Config.Rand, which need not be safe
// for concurrent use.
type lockedReader struct{ s *Server }

func (r lockedReader) Read(p []byte) (int, error) {
	r.s.randMu.Lock()
	defer r.s.randMu.Unlock()
	return r.s.cfg.Rand.Read(p)
}
