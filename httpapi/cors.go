package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"
)

// defaultAllowHeaders are the request headers browsers may send when a
// preflight does not list the ones it wants.
const defaultAllowHeaders = "Authorization, Content-Type, X-HTTP-Method-Override, X-Firebase-ETag, " +
	"If-Match, If-None-Match, X-Firebase-Decoding, Accept"

// preflight answers a CORS preflight (OPTIONS) on any path: every origin
// may use every method, and the headers it asks for (SPEC §7).
func preflight(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Access-Control-Allow-Methods", "GET, PUT, POST, PATCH, DELETE, OPTIONS")
	allow := defaultAllowHeaders
	if asked := c.GetHeader("Access-Control-Request-Headers"); asked != "" {
		allow = asked
	}
	h.Set("Access-Control-Allow-Headers", allow)
	h.Set("Access-Control-Max-Age", "86400")
	send(c, http.StatusOK, jsonContentType, nil)
}
