package httpapi

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/httpapi/console"
	"github.com/arbordb/arbor/httpapi/idtoken"
	"github.com/arbordb/arbor/httpapi/realtime"
)

// Server is the HTTP front of one Arbor node.
type Server struct {
	cfg         Config
	db          DB
	log         *slog.Logger
	adminHashes [][sha256.Size]byte
	tokens      *idtoken.Verifier
	metrics     *metrics
	engine      *gin.Engine
	draining    atomic.Bool
	hub         hub              // open event streams
	queries     queryWatches     // open streams with query parameters (streamquery.go)
	render      renderBudget     // bytes of large answers being rendered
	firstPuts   firstPuts        // streams' first puts being rendered (streamshared.go)
	writes      *fairGate        // client writes in progress (fairgate.go)
	rt          *realtime.Server // the realtime protocol at /.ws (realtimewire.go)
	disconnects *replicatedDisconnects

	randMu sync.Mutex // Config.Rand need not be safe for concurrent use
}

// New builds a Server over db. cfg is copied; zero fields get the defaults
// of DefaultConfig.
func New(cfg Config, db DB) (*Server, error) {
	if db == nil {
		return nil, errors.New("httpapi: nil DB")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, db: db, log: cfg.Logger, metrics: m, render: newRenderBudget(cfg.RenderBudgetBytes), tokens: cfg.Tokens}
	for _, secret := range cfg.AdminSecrets {
		s.adminHashes = append(s.adminHashes, sha256.Sum256([]byte(secret)))
	}
	s.writes = newFairGate(cfg.MaxWritesInProgress, m.writesWaiting)
	s.watchKeys()
	if s.rt, err = s.newRealtime(); err != nil {
		return nil, err
	}
	s.engine = s.routes()
	return s, nil
}

// Handler returns the HTTP handler (the Gin engine).
func (s *Server) Handler() http.Handler { return s.engine }

// SetDraining turns draining on or off. While draining, /readyz answers 503
// "shutting down" so load balancers stop sending traffic, and new data
// requests get 503 with Retry-After.
func (s *Server) SetDraining(on bool) { s.draining.Store(on) }

// routes builds the Gin engine. Paths are matched on their escaped form and
// never redirected: the data handler parses them itself (SPEC §1).
func (s *Server) routes() *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.RemoveExtraSlash = false
	e.HandleMethodNotAllowed = false
	e.UseRawPath = true
	e.UnescapePathValues = false
	e.Use(s.observe, s.recoverPanic, commonHeaders)
	e.GET("/livez", s.livez)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.metricsHandler())
	e.GET("/status", s.status)
	s.realtimeRoutes(e)
	e.GET("/", s.root)
	e.GET(console.Prefix+"*file", serveConsole)
	e.HEAD(console.Prefix+"*file", serveConsole)
	e.POST(PlaygroundPath, s.playground)
	e.NoRoute(s.data)
	return e
}

// errPanic is what a recovered panic becomes: a 500.
var errPanic = errors.New("panic in handler")

// recoverPanic turns a panic into a logged 500 so one bad request never
// takes the node down.
func (s *Server) recoverPanic(c *gin.Context) {
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		if p == http.ErrAbortHandler {
			panic(p) // net/http's way to abort a response; not a bug
		}
		s.metrics.panics.Inc()
		s.log.Error("panic serving request", "method", c.Request.Method,
			"path", c.Request.URL.EscapedPath(), "panic", p, "stack", string(debug.Stack()))
		if !c.Writer.Written() {
			s.writeError(c, errPanic)
		}
		c.Abort()
	}()
	c.Next()
}
