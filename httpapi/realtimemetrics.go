package httpapi

import "github.com/gin-gonic/gin"

// serveRealtime serves one realtime-protocol connection, counted in
// arbor_realtime_connections_open while it lasts, so that operators and
// the abuse suite see connections a flood or a stalled client left open.
func (s *Server) serveRealtime(c *gin.Context) {
	s.metrics.realtimeConns.Inc()
	defer s.metrics.realtimeConns.Dec()
	s.rt.ServeHTTP(c.Writer, c.Request)
}
