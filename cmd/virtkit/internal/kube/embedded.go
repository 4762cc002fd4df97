package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// EmbeddedOptions are those of an API server started in this process.
type EmbeddedOptions struct {
	// Store backs the API (the memory or etcd store). Required.
	Store store.Store
	// Defaults are what the API's admission applies.
	Defaults virtkit.DefaultOptions
	// Namespace is the client's; "" is default.
	Namespace string
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Embedded is an API server this process started and a client of it.
type Embedded struct {
	*Client
	// Kubeconfig is the path of an admin kubeconfig for the server, valid
	// until Close.
	Kubeconfig string
	srv        *cluster.APIServer
	dir        string
}

// StartEmbedded serves the API over opts.Store on a loopback port
// (cluster.StartAPIServer, certificates in a temporary directory) and
// connects to it, so that a command without a kubeconfig talks to the
// store through the same API, admission and printer columns as with one.
// Close stops the server.
func StartEmbedded(ctx context.Context, opts EmbeddedOptions) (*Embedded, error) {
	if opts.Store == nil {
		return nil, errors.New("EmbeddedOptions.Store: required")
	}
	dir, err := os.MkdirTemp("", "virtkit-api-")
	if err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	srv, err := cluster.StartAPIServer(ctx, cluster.APIServerOptions{
		Store: opts.Store, Defaults: opts.Defaults, Addr: "127.0.0.1:0",
		CertDir: filepath.Join(dir, "pki"), Kubeconfig: kubeconfig, Logger: opts.Logger,
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("in-process API server: %w", err)
	}
	e := &Embedded{Kubeconfig: kubeconfig, srv: srv, dir: dir}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		_ = e.Close()
		return nil, fmt.Errorf("in-process API server: %w", err)
	}
	cfg.UserAgent = "virtkit"
	ns := opts.Namespace
	if ns == "" {
		ns = "default"
	}
	if e.Client, err = NewClient(cfg, ns); err != nil {
		_ = e.Close()
		return nil, fmt.Errorf("in-process API server: %w", err)
	}
	return e, nil
}

// Close stops the server and removes its certificates.
func (e *Embedded) Close() error {
	err := e.srv.Stop()
	return errors.Join(err, os.RemoveAll(e.dir))
}
