package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// methodKey stores the method a data request is handled as (after
// X-HTTP-Method-Override) for the metrics labels.
const methodKey = "arbor.method"

// metrics are the HTTP layer's Prometheus collectors.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// Streams (SPEC §5): open now, events sent, subscribers cancelled for
	// falling behind.
	streamsOpen    prometheus.Gauge
	streamEvents   prometheus.Counter
	streamsDropped prometheus.Counter
	// The realtime protocol (realtimewire.go): connections at /.ws
	// open now, and their listens' subscriptions to the hub.
	realtimeConns   prometheus.Gauge
	realtimeListens prometheus.Gauge
	// Writes waiting for a slot (fairgate.go).
	writesWaiting prometheus.Gauge
	// Writes judged again because the rules changed while they waited
	// for the log (fsm.ErrRulesChanged).
	writesRejudged prometheus.Counter
	// Panics recovered while serving: each one is a bug, and the test
	// suites fail when any was counted.
	panics prometheus.Counter
	// ID-token key files found unusable; their last good keys stay
	// trusted meanwhile (streamauth.go).
	keyReloadErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	requests, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "arbor", Subsystem: "http", Name: "requests_total",
		Help: "HTTP requests by method (after method override) and status code.",
	}, []string{"method", "code"}))
	if err != nil {
		return nil, err
	}
	latency, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "arbor", Subsystem: "http", Name: "request_duration_seconds",
		Help:    "HTTP request latency by method (after method override).",
		Buckets: prometheus.DefBuckets,
	}, []string{"method"}))
	if err != nil {
		return nil, err
	}
	m := &metrics{requests: requests, latency: latency}
	if m.streamsOpen, err = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "arbor", Subsystem: "stream", Name: "open",
		Help: "Event streams open on this node.",
	})); err != nil {
		return nil, err
	}
	if m.streamEvents, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "arbor", Subsystem: "stream", Name: "events_total",
		Help: "put and patch events sent on streams.",
	})); err != nil {
		return nil, err
	}
	if m.streamsDropped, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "arbor", Subsystem: "stream", Name: "cancelled_total",
		Help: "Streams cancelled because the subscriber fell behind its buffer.",
	})); err != nil {
		return nil, err
	}
	if m.realtimeConns, err = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "arbor", Subsystem: "realtime", Name: "connections_open",
		Help: "Realtime-protocol (WebSocket /.ws) connections open on this node.",
	})); err != nil {
		return nil, err
	}
	if m.realtimeListens, err = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "arbor", Subsystem: "realtime", Name: "listens_open",
		Help: "Realtime-protocol listens subscribed to this node's changes.",
	})); err != nil {
		return nil, err
	}
	if m.writesWaiting, err = register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "arbor", Subsystem: "http", Name: "writes_waiting",
		Help: "Writes waiting for one of the node's write slots (--max-writes-in-progress).",
	})); err != nil {
		return nil, err
	}
	if m.writesRejudged, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "arbor", Subsystem: "http", Name: "writes_rejudged_total",
		Help: "Writes judged and proposed again because the security rules changed before they reached the log.",
	})); err != nil {
		return nil, err
	}
	if m.panics, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "arbor", Name: "panics_recovered_total",
		Help: "Panics recovered while serving requests and streams; each one is a bug.",
	})); err != nil {
		return nil, err
	}
	if m.keyReloadErrors, err = register(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "arbor", Subsystem: "jwt", Name: "key_reload_errors_total",
		Help: "Times an ID-token key file (--jwt-public-key) was found missing, empty, truncated or unusable; the keys last loaded from it stay trusted.",
	})); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c, or reuses an identical collector already there, so
// several Servers (tests, restarts in-process) can share one registry.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(T); ok {
				return existing, nil
			}
		}
		return c, fmt.Errorf("httpapi: register metrics: %w", err)
	}
	return c, nil
}

// observe counts every request and its latency. Unknown methods share one
// label so clients cannot grow the label set.
func (s *Server) observe(c *gin.Context) {
	start := time.Now()
	c.Next()
	method := c.GetString(methodKey)
	if method == "" {
		method = c.Request.Method
	}
	switch method {
	case http.MethodGet, http.MethodPut, http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		method = "other"
	}
	s.metrics.requests.WithLabelValues(method, strconv.Itoa(c.Writer.Status())).Inc()
	s.metrics.latency.WithLabelValues(method).Observe(time.Since(start).Seconds())
}

// metricsHandler serves the Prometheus text format of Config.Gatherer.
func (s *Server) metricsHandler() gin.HandlerFunc {
	return gin.WrapH(promhttp.HandlerFor(s.cfg.Gatherer, promhttp.HandlerOpts{ErrorLog: slogPrinter{s}}))
}

// slogPrinter adapts the logger to promhttp's Println-style error log.
type slogPrinter struct{ s *Server }

func (p slogPrinter) Println(v ...any) { p.s.log.Error("serving metrics", "err", fmt.Sprint(v...)) }
