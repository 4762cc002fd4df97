package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/metrics/wire"
	"github.com/virtkit/virtkit/store"
)

// serveDemoMetrics serves the cluster's metrics on addr at /metrics until
// stop is called or ctx ends, and prints the URL to out.
func serveDemoMetrics(ctx context.Context, addr string, c *cluster.Cluster, out io.Writer) (stop func(), err error) {
	h, err := wire.StartClusterHandler(ctx, c, metrics.Options{})
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	return serveHandler(ctx, addr, h, out)
}

// instrumentedStore wraps st (a new memory store when nil) so its calls
// are served as KubeVirt's REST client metrics.
func instrumentedStore(st store.Store) (store.Store, error) {
	host := "store"
	if st == nil {
		st, host = store.NewMemory(), "memory"
	}
	is, err := metrics.InstrumentStore(st, host)
	if err != nil {
		return nil, err
	}
	return is, nil
}

// route is an extra handler served next to /metrics.
type route struct {
	path    string
	handler http.Handler
}

// serveMetrics serves reg on addr at /metrics (and any extra routes) until
// stop is called or ctx ends, and prints the URL to out.
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, out io.Writer, routes ...route) (stop func(), err error) {
	return serveHandler(ctx, addr, metrics.Handler(reg), out, routes...)
}

// serveHandler serves h on addr at /metrics (and any extra routes) until
// stop is called or ctx ends, and prints the URL to out.
func serveHandler(ctx context.Context, addr string, h http.Handler, out io.Writer, routes ...route) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	for _, r := range routes {
		mux.Handle(r.path, r.handler)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-addr: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(out, "metrics server: %v\n", err)
		}
	}()
	fmt.Fprintf(out, "metrics: http://%s/metrics\n", ln.Addr())

	stop = shutdownOnce(ctx, srv, served)
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-served:
		}
	}()
	return stop, nil
}

// shutdownOnce returns a stop function for srv, whose Serve closes served
// when it returns: the first call shuts srv down (closing it if that takes
// over 5 s) and waits for Serve to return; later calls do nothing.
func shutdownOnce(ctx context.Context, srv *http.Server, served <-chan struct{}) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				_ = srv.Close()
			}
			<-served
		})
	}
}
