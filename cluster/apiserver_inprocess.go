package cluster

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// InProcessAPIOptions configure StartInProcessAPI.
type InProcessAPIOptions struct {
	// Store backs the API; it must be a kubestorage.Backend (the memory
	// store, created with a StartResourceVersion of 1 or more, and the
	// etcd store are). Required.
	Store store.Store
	// Defaults are the defaults the API's admission applies.
	Defaults virtkit.DefaultOptions
	// Logger receives the server's errors; nil discards them.
	Logger *slog.Logger
	// Clock is the clock of the tables' AGE columns; nil is the real clock.
	Clock clock.PassiveClock
}

// InProcessAPI is the API served inside this process, with no port.
type InProcessAPI struct {
	// Config reaches the server through an in-memory pipe as AdminUser
	// (a member of AdminGroup); nothing outside this process can.
	Config *rest.Config

	cancel context.CancelFunc
}

// StartInProcessAPI serves the API `virtkit controller --api-addr` serves
// (the same generic API server, its admission and tables) over opts.Store
// inside this process: no listener, no certificates, no watch cache, so it
// is cheap to start for one command. As kube-apiserver does, it creates the
// system namespaces (virtkit.SystemNamespaces) that do not exist yet. Clients use Config as they would a
// kubeconfig's. It runs until ctx ends or Stop is called.
func StartInProcessAPI(ctx context.Context, opts InProcessAPIOptions) (*InProcessAPI, error) {
	backend, ok := opts.Store.(kubestorage.Backend)
	if !ok {
		return nil, fmt.Errorf("%w: InProcessAPIOptions.Store: %T cannot back the API server", errInvalidOptions, opts.Store)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The namespaces kube-apiserver creates at start, so that a command
	// against a store no control plane has served yet can write to
	// "default"; a store this client may only read keeps its own.
	if err := controller.EnsureNamespaces(ctx, opts.Store, virtkit.SystemNamespaces()...); err != nil {
		log.Warn("in-process API: system namespaces", "err", err)
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	token := adminToken(base64.RawURLEncoding.EncodeToString(b))
	srv, err := apiserver.NewGeneric(apiserver.GenericOptions{Store: backend, Defaults: opts.Defaults, Authenticator: token,
		Logger: log.With("component", "apiserver"), Clock: opts.Clock})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	if err := srv.Start(sctx); err != nil {
		cancel()
		return nil, err
	}
	cfg := &rest.Config{Host: "http://virtkit-in-process", BearerToken: string(token), Dial: srv.DialLoopback, QPS: -1}
	return &InProcessAPI{Config: cfg, cancel: cancel}, nil
}

// Stop stops the server.
func (a *InProcessAPI) Stop() { a.cancel() }

// adminToken authenticates the in-process client: the one bearer token it
// holds is AdminUser.
type adminToken string

func (t adminToken) Authenticate(r *http.Request) (*apiserver.User, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, nil
	}
	if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(t)) != 1 {
		return nil, fmt.Errorf("%w: invalid bearer token", apiserver.ErrUnauthenticated)
	}
	return &apiserver.User{Name: apiserver.AdminUser, Groups: []string{apiserver.AdminGroup}}, nil
}
