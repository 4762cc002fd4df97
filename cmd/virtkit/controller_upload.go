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

// uploadListener is the upload proxy's address, bound before the API
// server is built (which serves its URL in CDIConfig), and the tokens both
// share.
type uploadListener struct {
	ln     net.Listener
	url    string
	tokens *upload.Tokens
}

// listenUploads binds --uploadproxy-addr; nil without it.
func (f *apiFlags) listenUploads(ctx context.Context) (*uploadListener, error) {
	if f.uploadAddr == "" {
		return nil, nil
	}
	if f.uploads == nil {
		return nil, errors.New("--uploadproxy-addr: uploads need this process's node agents (a controller alone has no volumes to write)")
	}
	key, err := upload.NewKey()
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", f.uploadAddr)
	if err != nil {
		return nil, fmt.Errorf("--uploadproxy-addr: %w", err)
	}
	return &uploadListener{ln: ln, url: "https://" + kubeconfigHost(ln.Addr()), tokens: &upload.Tokens{Key: key}}, nil
}

// close releases the address of a proxy that will not be served.
func (u *uploadListener) close() {
	if u != nil {
		_ = u.ln.Close()
	}
}

// serve serves CDI's upload proxy (virtctl image-upload --uploadproxy-url)
// over TLS until ctx ends or stop is called, taking uploads into r with
// tokens the API server issued.
func (u *uploadListener) serve(ctx context.Context, tlsConfig *tls.Config, r upload.Receiver, log *slog.Logger, stderr io.Writer) (stop func(), err error) {
	p, err := upload.NewProxy(upload.ProxyOptions{Tokens: u.tokens, Receiver: r, Logger: log.With("component", "uploadproxy")})
	if err != nil {
		u.close()
		return nil, err
	}
	hs := &http.Server{Handler: p, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(tls.NewListener(u.ln, tlsConfig)); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			fmt.Fprintf(stderr, "upload proxy: %v\n", err)
		}
	}()
	fmt.Fprintf(stderr, "uploadproxy: %s\n", u.url)
	log.Info("upload proxy listening", "url", u.url)
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
