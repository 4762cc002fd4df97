package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/cdi/upload"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// uploadListener is the upload proxy's address, bound before the API
// server is built (which serves its URL in CDIConfig), and the tokens both
// share.
type uploadListener struct {
	ln     net.Listener
	url    string
	tokens *upload.Tokens
}

// listenUploads binds addr; nil for "".
func listenUploads(ctx context.Context, addr string) (*uploadListener, error) {
	if addr == "" {
		return nil, nil
	}
	key, err := upload.NewKey()
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("APIServerOptions.UploadProxyAddr: %w", err)
	}
	return &uploadListener{ln: ln, url: "https://" + DialAddr(ln.Addr()), tokens: &upload.Tokens{Key: key}}, nil
}

// close releases the address of a proxy that will not be served.
func (u *uploadListener) close() {
	if u != nil {
		_ = u.ln.Close()
	}
}

// serve serves CDI's upload proxy over TLS until ctx ends or stop is
// called, taking uploads with tokens the API server issued into r (nil:
// none) and forwarding those to other processes' nodes with fw; serving
// errors go to fail.
func (u *uploadListener) serve(ctx context.Context, tlsConfig *tls.Config, r upload.Receiver, fw upload.UploadForwarder, log *slog.Logger, fail func(error)) (stop func(), err error) {
	p, err := upload.NewProxy(upload.ProxyOptions{Tokens: u.tokens, Receiver: r, Forwarder: fw, Logger: log.With("component", "uploadproxy")})
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
			log.Error("upload proxy", "err", err)
			fail(fmt.Errorf("upload proxy: %w", err))
		}
	}()
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

// uploadForwarder forwards uploads to the node agents' endpoints with the
// API server's node client certificate.
func uploadForwarder(certs *apiserver.Certificates, st store.Store) (*upload.Forwarder, error) {
	cfg, err := certs.NodeTLSConfig()
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{TLSClientConfig: cfg, TLSHandshakeTimeout: 10 * time.Second, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}
	return &upload.Forwarder{Client: &http.Client{Transport: tr}, Locator: uploadLocator{st: st}}, nil
}

// serveNodeEndpoint serves a node agent's endpoint on ln, publishing url,
// until ctx ends or stop is called; a serving error is logged.
func serveNodeEndpoint(ctx context.Context, ep *node.Endpoint, ln net.Listener, cfg *tls.Config, url string, log *slog.Logger) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := ep.Serve(ctx, ln, cfg, url); err != nil {
			log.Error("node endpoint", "err", err)
		}
	}()
	log.Info("node endpoint listening", "url", url)
	return func() { cancel(); <-done }
}

// serveLocalEndpoints serves the endpoints of this process's node agents
// on loopback, with serving certificates the CA issues in memory.
func serveLocalEndpoints(ctx context.Context, certs *apiserver.Certificates, nodes []*Node, log *slog.Logger) (stop func(), err error) {
	var stops []func()
	stopAll := func() {
		var wg sync.WaitGroup
		for _, s := range stops {
			wg.Go(s)
		}
		wg.Wait()
	}
	for _, n := range nodes {
		if n.Agent == nil {
			continue
		}
		certPEM, keyPEM, err := certs.IssueServingCert("virtkit-node-"+n.Name, []string{"127.0.0.1"})
		if err != nil {
			stopAll()
			return nil, err
		}
		cfg, err := node.EndpointTLSConfig(certs.CAPEM, certPEM, keyPEM)
		if err != nil {
			stopAll()
			return nil, err
		}
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("node %s endpoint: %w", n.Name, err)
		}
		stops = append(stops, serveNodeEndpoint(ctx, n.Agent.Endpoint(node.EndpointOptions{}), ln, cfg,
			"https://"+ln.Addr().String(), log.With("node", n.Name)))
	}
	return stopAll, nil
}
