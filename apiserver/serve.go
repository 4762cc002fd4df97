package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// shutdownGrace is how long Serve waits for requests to finish once its
// context ends before it closes the connections (watches never finish).
const shutdownGrace = 2 * time.Second

// Serve serves the API over TLS on ln until ctx ends. tlsConfig must hold
// the serving certificate; to authenticate client certificates it must
// verify them (Certificates.ServerTLSConfig does).
func (s *Server) Serve(ctx context.Context, ln net.Listener, tlsConfig *tls.Config) error {
	if tlsConfig == nil || (len(tlsConfig.Certificates) == 0 && tlsConfig.GetCertificate == nil) {
		return fmt.Errorf("%w: a TLS serving certificate is required", ErrOptions)
	}
	hs := &http.Server{
		Handler:           s,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		// Bodies are bounded in time per request (Options.RequestBodyTimeout):
		// a ReadTimeout would end watches and streams.
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 1 << 20,
		BaseContext:    func(net.Listener) context.Context { return ctx },
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
	}()
	err := hs.Serve(tls.NewListener(&limitListener{Listener: ln, max: s.opts.MaxConnections}, tlsConfig))
	cancel()
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
