package httpapi

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/fsm/tree"
)

// Content types of responses.
const (
	jsonContentType = "application/json; charset=utf-8"
	jsContentType   = "application/javascript; charset=utf-8"
)

// optionsKey stores a data request's parsed options in the gin context, so
// writeError can render a 412 body the way the request asked.
const optionsKey = "arbor.options"

// commonHeaders sets the headers every response carries (SPEC §7). Handlers
// that answer another content type overwrite it.
func commonHeaders(c *gin.Context) {
	h := c.Writer.Header()
	h.Set("Content-Type", jsonContentType)
	h.Set("Cache-Control", "no-cache")
	h.Set("Access-Control-Allow-Origin", "*")
	c.Next()
}

// send writes a complete response. It sets Content-Type itself because
// gin's c.Data keeps a Content-Type that is already set.
func send(c *gin.Context, status int, contentType string, body []byte) {
	c.Header("Content-Type", contentType)
	c.Status(status)
	if len(body) == 0 {
		c.Writer.WriteHeaderNow()
		return
	}
	_, _ = c.Writer.Write(body) // a failed write means the client is gone
}

// renderOptions returns how JSON for this request is rendered.
func renderOptions(c *gin.Context) tree.RenderOptions {
	if v, ok := c.Get(optionsKey); ok {
		o := v.(*options)
		return tree.RenderOptions{Pretty: o.pretty, Export: o.export}
	}
	return tree.RenderOptions{}
}

// sendData writes a successful data response: 204 for print=silent, the
// JSONP wrapper for callback=, and the download header for download=.
func sendData(c *gin.Context, o *options, status int, body []byte) {
	if o.silent {
		send(c, http.StatusNoContent, jsonContentType, nil)
		return
	}
	if o.download != "" {
		c.Header("Content-Disposition", `attachment; filename="`+o.download+`"`)
	}
	if o.callback != "" {
		js := make([]byte, 0, len(o.callback)+len(body)+3)
		js = append(js, o.callback...)
		js = append(js, '(')
		js = append(js, strings.TrimRight(string(body), "\n")...)
		js = append(js, ");"...)
		send(c, status, jsContentType, js)
		return
	}
	send(c, status, jsonContentType, body)
}
