package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/httpapi/console"
)

// root sends a browser opening the node's address to the console; every
// other request for / is a data request, answered as before.
func (s *Server) root(c *gin.Context) {
	if c.Request.URL.RawQuery == "" && console.WantsPage(c.Request) {
		c.Header("Content-Type", "text/plain; charset=utf-8")
		c.Redirect(http.StatusFound, console.Prefix)
		return
	}
	s.data(c)
}

// serveConsole serves the console's files under console.Prefix.
func serveConsole(c *gin.Context) {
	console.Serve(c.Writer, c.Request, c.Param("file"))
}
