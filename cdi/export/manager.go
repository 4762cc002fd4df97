package export

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
)

// Endpoint is where a running export server serves an export.
type Endpoint struct {
	// InternalURL is the server's base URL; a volume's raw image is at
	// InternalURL + "/volumes/NAME/disk.img".
	InternalURL string
	// ExternalURL is the same server's base URL in KubeVirt's external
	// form (.../api/export.kubevirt.io/v1/namespaces/NS/virtualmachineexports/NAME).
	ExternalURL string
	// CACert is the PEM CA that signed the server's certificate.
	CACert string
}

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	// CA signs the servers' certificates; nil makes a self-signed one.
	CA *CA
	// AllowedDirs are the directories exported files may lie under
	// (the storage classes' directories); required to export anything.
	AllowedDirs []string
	// Addr is the address servers listen on; empty is 127.0.0.1:0.
	Addr string
	// MaxConcurrent bounds each server's downloads; 0 is
	// DefaultMaxConcurrent.
	MaxConcurrent int
	// Logger receives the servers' logs; nil discards them.
	Logger *slog.Logger
}

// Manager runs one export server per export (namespace/name). Servers
// run from the first Ensure until Stop, Close, or the end of Start's
// context.
type Manager struct {
	o      ManagerOptions
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	servers map[string]*running
}

type running struct {
	srv     *Server
	token   []byte
	volumes []Volume
	cancel  context.CancelFunc
	done    chan struct{}
	ep      Endpoint
}

// NewManager returns a Manager.
func NewManager(o ManagerOptions) (*Manager, error) {
	if o.CA == nil {
		ca, err := NewCA(nil)
		if err != nil {
			return nil, err
		}
		o.CA = ca
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{o: o, ctx: ctx, cancel: cancel, servers: map[string]*running{}}, nil
}

// CA is the manager's CA.
func (m *Manager) CA() *CA { return m.o.CA }

// ExternalPrefix is the path prefix of an export's external links.
func ExternalPrefix(namespace, name string) string {
	return "/api/export.kubevirt.io/v1/namespaces/" + namespace + "/virtualmachineexports/" + name
}

// Ensure makes sure a server serves the export namespace/name with token
// and volumes, replacing one that serves other volumes or another token,
// and returns its endpoint.
func (m *Manager) Ensure(ctx context.Context, namespace, name string, token []byte, volumes []Volume) (Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return Endpoint{}, err
	}
	if err := m.ctx.Err(); err != nil {
		return Endpoint{}, fmt.Errorf("export servers stopped: %w", err)
	}
	key := namespace + "/" + name
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.servers[key]; ok {
		if bytes.Equal(r.token, token) && slices.Equal(r.volumes, volumes) {
			select {
			case <-r.done:
			default:
				return r.ep, nil
			}
		}
		m.stopLocked(key)
	}
	prefix := ExternalPrefix(namespace, name)
	srv, err := Listen(Options{Addr: m.o.Addr, CA: m.o.CA, AllowedDirs: m.o.AllowedDirs, Token: token, Volumes: volumes,
		ExternalPrefix: prefix, MaxConcurrent: m.o.MaxConcurrent, Logger: m.o.Logger.With("export", key)})
	if err != nil {
		return Endpoint{}, err
	}
	sctx, cancel := context.WithCancel(m.ctx)
	r := &running{srv: srv, token: append([]byte(nil), token...), volumes: slices.Clone(volumes), cancel: cancel,
		done: make(chan struct{}),
		ep:   Endpoint{InternalURL: srv.URL(), ExternalURL: srv.URL() + prefix, CACert: m.o.CA.CertPEM()}}
	go func() {
		defer close(r.done)
		if err := srv.Serve(sctx); err != nil {
			m.o.Logger.Warn("export server stopped", "export", key, "err", err)
		}
	}()
	m.servers[key] = r
	return r.ep, nil
}

// Stop stops the server of export namespace/name, if any, and waits for
// it to finish or ctx to end.
func (m *Manager) Stop(ctx context.Context, namespace, name string) error {
	m.mu.Lock()
	r, ok := m.servers[namespace+"/"+name]
	if ok {
		m.stopLocked(namespace + "/" + name)
	}
	m.mu.Unlock()
	if !ok {
		return nil
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Manager) stopLocked(key string) {
	if r, ok := m.servers[key]; ok {
		r.cancel()
		delete(m.servers, key)
	}
}

// Running reports whether a server serves namespace/name.
func (m *Manager) Running(namespace, name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.servers[namespace+"/"+name]
	return ok
}

// Start blocks until ctx ends, then stops every server.
func (m *Manager) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-m.ctx.Done():
	}
	m.Close()
	return nil
}

// Close stops every server; Ensure fails afterwards.
func (m *Manager) Close() {
	m.cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.servers {
		m.stopLocked(k)
	}
}
