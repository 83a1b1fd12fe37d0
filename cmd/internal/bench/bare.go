package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/arbordb/arbor/cmd/internal/selfsigned"
)

// bareServer is the ceiling of `arbor bench`: an HTTPS Gin server in the
// bench process that answers every request with a constant value at once.
// Arbor can at best approach it: it is the same client, TLS and HTTP
// stack with no database behind.
type bareServer struct {
	srv  *http.Server
	addr string // https://127.0.0.1:port
	cert *x509.Certificate
	errc chan error
}

// startBareServer listens on 127.0.0.1 (a free port) with a fresh
// self-signed certificate; every request gets 200 and the value as JSON.
func startBareServer(value string) (*bareServer, error) {
	certPEM, keyPEM, err := selfsigned.New([]string{"127.0.0.1", "localhost"}, time.Now(), 24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("bare handler certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("bare handler certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("bare handler certificate: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bare handler: %w", err)
	}
	s := &bareServer{
		srv: &http.Server{
			Handler:           bareHandler(strconv.AppendQuote(nil, value)),
			TLSConfig:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}},
			ReadHeaderTimeout: 10 * time.Second, // as arbor serve's
			IdleTimeout:       2 * time.Minute,
		},
		addr: "https://" + ln.Addr().String(),
		cert: leaf,
		errc: make(chan error, 1),
	}
	go func() { s.errc <- s.srv.ServeTLS(ln, "", "") }()
	return s, nil
}

// bareHandler reads the body, as a real handler must, and answers body.
func bareHandler(body []byte) http.Handler {
	// Release mode: debug mode prints every route to stdout, which would
	// corrupt the --json output.
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.NoRoute(func(c *gin.Context) {
		_, _ = io.Copy(io.Discard, c.Request.Body)
		c.Header("Cache-Control", "no-cache")
		c.Data(http.StatusOK, "application/json; charset=utf-8", body)
	})
	return e
}

// close stops the server, waiting up to a second for open requests.
func (s *bareServer) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
	if err := <-s.errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("bare handler: %w", err)
	}
	return nil
}
