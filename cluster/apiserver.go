package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/apiserver/rbac"
	"github.com/virtkit/virtkit/cdi/upload"
	"github.com/virtkit/virtkit/store"
)

// APIServerOptions configure the Kubernetes API a control plane serves
// (kubectl, virtctl, client-go): what `virtkit controller --api-addr`
// runs. Store and Addr are required.
type APIServerOptions struct {
	// Store backs the API; it must be a kubestorage.Backend (the memory
	// and etcd stores are). Required.
	Store store.Store
	// Defaults are the defaults the API's admission applies, as the
	// control plane's Options.Defaults.
	Defaults virtkit.DefaultOptions
	// Addr is the TLS address served, e.g. 127.0.0.1:6443. Required.
	Addr string
	// CertDir holds the CA, serving and admin certificates, generated when
	// missing; "" is DefaultCertDir().
	CertDir string
	// CertHosts are extra host names and IPs the serving certificate
	// covers.
	CertHosts []string
	// TokenFile, when set, adds bearer tokens in kube-apiserver's format
	// (token,user,uid,"group1,group2" per line) to the client certificates.
	TokenFile string
	// PolicyFile, when set, adds RBAC objects or virtkit's rules to the
	// bootstrap policy (rbac.LoadAnyPolicyFile).
	PolicyFile string
	// Kubeconfig, when set, is where an admin kubeconfig for the API is
	// written.
	Kubeconfig string
	// MaxStreams, MaxStreamsPerUser, MaxWatchesPerUser,
	// MaxRequestsInFlight and MaxConnections bound the server
	// (apiserver.GenericOptions); 0 is the
	// server's default.
	MaxStreams, MaxStreamsPerUser, MaxWatchesPerUser, MaxRequestsInFlight, MaxConnections int
	// Registerer, when set, receives the API server's own metrics
	// (apiserver.GenericOptions.Registerer).
	Registerer prometheus.Registerer
	// GuestInfo, when set, answers the guest-agent subresources
	// (Cluster.GuestInfo for the node agents of this process).
	GuestInfo apiserver.GuestInfo
	// LocalNodes are node agents of this process; their endpoints
	// (console, VNC, port-forward) are served on loopback with
	// certificates the CA issues in memory.
	LocalNodes []*Node
	// UploadProxyAddr, when set, serves CDI's upload proxy (virtctl
	// image-upload --uploadproxy-url) over TLS on this address with the
	// API's serving certificate, taking the uploads to this process's
	// nodes into Uploads (a Cluster; nil when it runs none) and forwarding
	// the others to the upload server of the volume's node (its agent's
	// endpoint, reached with the API server's node client certificate).
	UploadProxyAddr string
	Uploads         upload.Receiver
	// Logger receives the servers' logs; nil discards them.
	Logger *slog.Logger
}

// APIServer is a running API server, with the upload proxy and the local
// node endpoints it serves.
type APIServer struct {
	// URL is the API's address for clients (https://HOST:PORT, loopback
	// for a wildcard listen address).
	URL string
	// UploadProxyURL is the upload proxy's address; "" without one.
	UploadProxyURL string
	// CertDir is the certificate directory used.
	CertDir string

	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error
}

// DefaultCertDir is where the control plane keeps its certificates by
// default: USER-CONFIG-DIR/virtkit/pki.
func DefaultCertDir() (string, error) {
	cfg, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cfg, "virtkit", "pki"), nil
}

// DialAddr is the address clients dial for a listener's address: a
// wildcard host becomes the loopback address.
func DialAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

func (o *APIServerOptions) validate() error {
	switch {
	case o.Store == nil:
		return fmt.Errorf("%w: APIServerOptions.Store: required", errInvalidOptions)
	case o.Addr == "":
		return fmt.Errorf("%w: APIServerOptions.Addr: required", errInvalidOptions)
	case o.MaxStreams < 0:
		return fmt.Errorf("%w: APIServerOptions.MaxStreams: %d: must not be negative", errInvalidOptions, o.MaxStreams)
	case o.MaxStreamsPerUser < 0:
		return fmt.Errorf("%w: APIServerOptions.MaxStreamsPerUser: %d: must not be negative", errInvalidOptions, o.MaxStreamsPerUser)
	case o.MaxWatchesPerUser < 0:
		return fmt.Errorf("%w: APIServerOptions.MaxWatchesPerUser: %d: must not be negative", errInvalidOptions, o.MaxWatchesPerUser)
	}
	if _, ok := o.Store.(kubestorage.Backend); !ok {
		return fmt.Errorf("%w: APIServerOptions.Store: %T cannot back the API server", errInvalidOptions, o.Store)
	}
	return nil
}

// StartAPIServer serves the API (Kubernetes' generic API server library
// over opts.Store, authenticated by client certificates and opts.TokenFile,
// authorized by RBAC's bootstrap policy and opts.PolicyFile), the endpoints
// of opts.LocalNodes and, with opts.UploadProxyAddr, the upload proxy,
// until ctx ends or Stop is called.
func StartAPIServer(ctx context.Context, opts APIServerOptions) (*APIServer, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := opts.CertDir
	if dir == "" {
		var err error
		if dir, err = DefaultCertDir(); err != nil {
			return nil, fmt.Errorf("APIServerOptions.CertDir: %w", err)
		}
	}
	certs, err := apiserver.EnsureCertificates(dir, opts.CertHosts)
	if err != nil {
		return nil, fmt.Errorf("APIServerOptions.CertDir %s: %w", dir, err)
	}
	up, err := listenUploads(ctx, opts.UploadProxyAddr)
	if err != nil {
		return nil, err
	}
	srv, err := newAPIServer(opts, certs, up, log)
	if err != nil {
		up.close()
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", opts.Addr)
	if err != nil {
		up.close()
		return nil, fmt.Errorf("APIServerOptions.Addr: %w", err)
	}
	s := &APIServer{URL: "https://" + DialAddr(ln.Addr()), CertDir: dir, done: make(chan struct{})}
	if opts.Kubeconfig != "" {
		err := apiserver.WriteKubeconfig(opts.Kubeconfig, apiserver.Kubeconfig{
			Server: s.URL, CAPEM: certs.CAPEM, User: apiserver.AdminUser,
			CertPEM: certs.AdminCert, KeyPEM: certs.AdminKey, Namespace: "default",
		})
		if err != nil {
			_ = ln.Close()
			up.close()
			return nil, fmt.Errorf("APIServerOptions.Kubeconfig: %w", err)
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	stopEndpoints, err := serveLocalEndpoints(sctx, certs, opts.LocalNodes, log)
	if err != nil {
		cancel()
		_ = ln.Close()
		up.close()
		return nil, err
	}
	stopUploads := func() {}
	if up != nil {
		s.UploadProxyURL = up.url
		fw, err := uploadForwarder(certs, opts.Store)
		if err == nil {
			stopUploads, err = up.serve(sctx, certs.ServerTLSConfig(), opts.Uploads, fw, log, s.record)
		}
		if err != nil {
			up.close()
			stopEndpoints()
			cancel()
			_ = ln.Close()
			return nil, err
		}
	}
	go func() {
		defer close(s.done)
		defer stopEndpoints()
		defer stopUploads()
		if err := srv.Serve(sctx, ln, certs.ServerTLSConfig()); err != nil {
			s.record(fmt.Errorf("api server: %w", err))
		}
	}()
	log.Info("API server listening", "url", s.URL, "certDir", dir, "kubeconfig", opts.Kubeconfig)
	return s, nil
}

// record keeps a serving error for Stop and logs it.
func (s *APIServer) record(err error) {
	s.mu.Lock()
	s.err = errors.Join(s.err, err)
	s.mu.Unlock()
}

// Stop stops the servers, waits for them to end and returns the errors
// they ended with.
func (s *APIServer) Stop() error {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// newAPIServer builds the generic API server, authorized by RBAC (the
// bootstrap policy and opts.PolicyFile).
func newAPIServer(opts APIServerOptions, certs *apiserver.Certificates, up *uploadListener, log *slog.Logger) (*apiserver.GenericServer, error) {
	authn := apiserver.Authenticators{apiserver.ClientCertAuthenticator{}}
	if opts.TokenFile != "" {
		tokens, err := apiserver.LoadTokenFile(opts.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("APIServerOptions.TokenFile: %w", err)
		}
		authn = append(authn, tokens)
	}
	policies := []*rbac.Policy{rbac.Bootstrap()}
	if opts.PolicyFile != "" {
		p, err := rbac.LoadAnyPolicyFile(opts.PolicyFile)
		if err != nil {
			return nil, fmt.Errorf("APIServerOptions.PolicyFile: %w", err)
		}
		policies = append(policies, p)
	}
	authz, err := rbac.New(policies...)
	if err != nil {
		return nil, fmt.Errorf("APIServerOptions.PolicyFile: %w", err)
	}
	nodeTLS, err := certs.NodeTLSConfig()
	if err != nil {
		return nil, err
	}
	gopts := apiserver.GenericOptions{
		Store: opts.Store.(kubestorage.Backend), Defaults: opts.Defaults, Authenticator: authn, Authorizer: authz,
		GuestInfo: opts.GuestInfo, NodeTLS: nodeTLS, Logger: log.With("component", "apiserver"),
		MaxStreams: opts.MaxStreams, MaxStreamsPerUser: opts.MaxStreamsPerUser, MaxWatchesPerUser: opts.MaxWatchesPerUser,
		MaxRequestsInFlight: opts.MaxRequestsInFlight, MaxConnections: opts.MaxConnections,
		WatchCache: true, Registerer: opts.Registerer,
	}
	if up != nil {
		gopts.UploadTokens, gopts.UploadProxyURL = up.tokens, up.url
	}
	return apiserver.NewGeneric(gopts)
}
