package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/virtkit/virtkit/cdi/upload"
)

// startUploadProxy serves CDI's upload proxy (virtctl image-upload
// --uploadproxy-url) over TLS on addr until ctx ends, taking uploads into
// r with tokens the API server issued.
func startUploadProxy(ctx context.Context, addr string, tlsConfig *tls.Config, tokens *upload.Tokens, r upload.Receiver,
	log *slog.Logger, stderr io.Writer) (stop func(), err error) {
	if r == nil {
		return nil, errors.New("--uploadproxy-addr: uploads need this process's node agents (a controller alone has no volumes to write)")
	}
	p, err := upload.NewProxy(upload.ProxyOptions{Tokens: tokens, Receiver: r, Logger: log.With("component", "uploadproxy")})
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--uploadproxy-addr: %w", err)
	}
	hs := &http.Server{Handler: p, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(tls.NewListener(ln, tlsConfig)); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			fmt.Fprintf(stderr, "upload proxy: %v\n", err)
		}
	}()
	url := "https://" + kubeconfigHost(ln.Addr())
	fmt.Fprintf(stderr, "uploadproxy: %s\n", url)
	log.Info("upload proxy listening", "url", url)
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
		<-done
		p.Close()
	}, nil
}
