package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/apiserver/rbac"
	"github.com/virtkit/virtkit/cdi/upload"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// apiFlags are the controller's API server flags.
type apiFlags struct {
	addr       string
	certDir    string
	hosts      []string
	tokenFile  string
	policyFile string
	kubeconfig string
	// maxStreams, maxStreamsPerUser bound the open console, VNC and
	// port-forward streams (0: the server's defaults).
	maxStreams, maxStreamsPerUser int
	// maxInFlight and maxConnections bound the requests and connections
	// (0: the server's defaults).
	maxInFlight, maxConnections int
	// uploadAddr serves the upload proxy; uploads takes its uploads (this
	// process's cluster, nil for a controller alone).
	uploadAddr string
	uploads    upload.Receiver
}

func (f *apiFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.addr, "api-addr", "", "serve the Kubernetes API (kubectl, client-go) over TLS on this address, e.g. 127.0.0.1:6443")
	fs.StringVar(&f.certDir, "api-cert-dir", "",
		"directory of the API's CA, serving and admin certificates, generated when missing (default: USER-CONFIG-DIR/virtkit/pki)")
	fs.StringSliceVar(&f.hosts, "api-cert-hosts", nil, "extra host names and IPs the generated serving certificate covers")
	fs.StringVar(&f.tokenFile, "api-token-file", "", `bearer tokens, kube-apiserver's format: token,user,uid,"group1,group2" per line`)
	fs.StringVar(&f.policyFile, "api-policy-file", "",
		"authorization policy: RBAC Roles, ClusterRoles and their bindings (YAML or JSON), or rules {rules: [{user|group, namespaces, verbs, resources}]}; "+
			"without it only "+apiserver.AdminGroup+" members (and the control plane and node agents) are allowed beyond discovery")
	fs.StringVar(&f.kubeconfig, "write-kubeconfig", "", "write an admin kubeconfig for the API to this path")
	fs.IntVar(&f.maxStreams, "api-max-streams", 0,
		fmt.Sprintf("console, vnc and port-forward streams open at once, more are refused with 429 TooManyRequests (0: %d)", apiserver.DefaultMaxStreams))
	fs.IntVar(&f.maxStreamsPerUser, "api-max-streams-per-user", 0,
		fmt.Sprintf("one user's console, vnc and port-forward streams open at once (0: %d)", apiserver.DefaultMaxStreamsPerUser))
	fs.IntVar(&f.maxInFlight, "api-max-requests-inflight", 0,
		"requests served at once, watches and streams apart; more are refused with 429 TooManyRequests (0: the API server library's default, 400)")
	fs.StringVar(&f.uploadAddr, "uploadproxy-addr", "",
		"serve CDI's upload proxy (virtctl image-upload --uploadproxy-url) over TLS on this address, with the API's serving certificate; needs --api-addr")
	fs.IntVar(&f.maxConnections, "api-max-connections", 0,
		fmt.Sprintf("connections open at once, more are closed when accepted (0: %d)", apiserver.DefaultMaxConnections))
}

// start serves the API until ctx ends or stop is called; without --api-addr
// it does nothing.
// guest, when not nil, answers the guest-agent subresources; the node
// agents of local (this process's) serve their endpoints on loopback.
func (f *apiFlags) start(ctx context.Context, st store.Store, defaults virtkit.DefaultOptions, guest apiserver.GuestInfo,
	local []*cluster.Node, log *slog.Logger, stderr io.Writer) (stop func(), err error) {
	if f.addr == "" {
		if f.uploadAddr != "" {
			return nil, errors.New("--uploadproxy-addr: need --api-addr (the API server issues the upload tokens)")
		}
		if f.kubeconfig != "" || f.tokenFile != "" || f.policyFile != "" {
			return nil, errors.New("--write-kubeconfig, --api-token-file, --api-policy-file: need --api-addr")
		}
		return func() {}, nil
	}
	if f.maxStreams < 0 {
		return nil, fmt.Errorf("--api-max-streams: %d: must not be negative", f.maxStreams)
	}
	if f.maxStreamsPerUser < 0 {
		return nil, fmt.Errorf("--api-max-streams-per-user: %d: must not be negative", f.maxStreamsPerUser)
	}
	dir := f.certDir
	if dir == "" {
		cfg, err := os.UserConfigDir()
		if err != nil {
			return nil, fmt.Errorf("--api-cert-dir: %w", err)
		}
		dir = filepath.Join(cfg, "virtkit", "pki")
	}
	certs, err := apiserver.EnsureCertificates(dir, f.hosts)
	if err != nil {
		return nil, fmt.Errorf("--api-cert-dir %s: %w", dir, err)
	}
	authn := apiserver.Authenticators{apiserver.ClientCertAuthenticator{}}
	if f.tokenFile != "" {
		tokens, err := apiserver.LoadTokenFile(f.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--api-token-file: %w", err)
		}
		authn = append(authn, tokens)
	}
	nodeTLS, err := certs.NodeTLSConfig()
	if err != nil {
		return nil, err
	}
	up, err := f.listenUploads(ctx)
	if err != nil {
		return nil, err
	}
	srv, err := f.newServer(st, defaults, authn, guest, nodeTLS, up, log)
	if err != nil {
		up.close()
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", f.addr)
	if err != nil {
		up.close()
		return nil, fmt.Errorf("--api-addr: %w", err)
	}
	server := "https://" + kubeconfigHost(ln.Addr())
	if f.kubeconfig != "" {
		err := apiserver.WriteKubeconfig(f.kubeconfig, apiserver.Kubeconfig{
			Server: server, CAPEM: certs.CAPEM, User: apiserver.AdminUser,
			CertPEM: certs.AdminCert, KeyPEM: certs.AdminKey, Namespace: "default",
		})
		if err != nil {
			_ = ln.Close()
			up.close()
			return nil, fmt.Errorf("--write-kubeconfig: %w", err)
		}
	}
	sctx, cancel := context.WithCancel(ctx)
	stopEndpoints, err := startLocalEndpoints(sctx, certs, local, log)
	if err != nil {
		cancel()
		_ = ln.Close()
		up.close()
		return nil, err
	}
	stopUploads := func() {}
	if up != nil {
		if stopUploads, err = up.serve(sctx, certs.ServerTLSConfig(), f.uploads, log, stderr); err != nil {
			stopEndpoints()
			cancel()
			_ = ln.Close()
			return nil, err
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stopEndpoints()
		defer stopUploads()
		if err := srv.Serve(sctx, ln, certs.ServerTLSConfig()); err != nil {
			fmt.Fprintf(stderr, "api server: %v\n", err)
		}
	}()
	fmt.Fprintf(stderr, "api: %s\n", server)
	log.Info("API server listening", "url", server, "certDir", dir, "kubeconfig", f.kubeconfig)
	return func() { cancel(); <-done }, nil
}

// newServer builds the API server: Kubernetes' generic API server library
// over st, authorized by RBAC (the bootstrap policy and --api-policy-file).
func (f *apiFlags) newServer(st store.Store, defaults virtkit.DefaultOptions, authn apiserver.Authenticator,
	guest apiserver.GuestInfo, nodeTLS *tls.Config, up *uploadListener, log *slog.Logger) (*apiserver.GenericServer, error) {
	backend, ok := st.(kubestorage.Backend)
	if !ok {
		return nil, fmt.Errorf("--api-addr: the store %T cannot back the API server", st)
	}
	policies := []*rbac.Policy{rbac.Bootstrap()}
	if f.policyFile != "" {
		p, err := rbac.LoadAnyPolicyFile(f.policyFile)
		if err != nil {
			return nil, fmt.Errorf("--api-policy-file: %w", err)
		}
		policies = append(policies, p)
	}
	authz, err := rbac.New(policies...)
	if err != nil {
		return nil, fmt.Errorf("--api-policy-file: %w", err)
	}
	opts := apiserver.GenericOptions{
		Store: backend, Defaults: defaults, Authenticator: authn, Authorizer: authz, GuestInfo: guest,
		NodeTLS: nodeTLS, Logger: log.With("component", "apiserver"),
		MaxStreams: f.maxStreams, MaxStreamsPerUser: f.maxStreamsPerUser,
		MaxRequestsInFlight: f.maxInFlight, MaxConnections: f.maxConnections,
		WatchCache: true,
	}
	if up != nil {
		opts.UploadTokens, opts.UploadProxyURL = up.tokens, up.url
	}
	return apiserver.NewGeneric(opts)
}

// kubeconfigHost is the address clients dial: a wildcard listen address
// becomes the loopback address.
func kubeconfigHost(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// clusterGuestInfo answers the guest-agent subresources from the node
// agents of this process (--store memory): the VMI's status.nodeName names
// the agent.
type clusterGuestInfo struct{ c *cluster.Cluster }

func (g clusterGuestInfo) agent(ctx context.Context, namespace, name string) (*node.Agent, error) {
	vmi := &virtkit.VirtualMachineInstance{}
	if err := g.c.Store().Get(ctx, store.Key{Namespace: namespace, Name: name}, vmi); err != nil {
		return nil, err
	}
	n := g.c.Node(vmi.Status.NodeName)
	if n == nil || n.Agent == nil {
		return nil, fmt.Errorf("vmi %s/%s: %w: not running on a node of this process", namespace, name, node.ErrNoGuestInfo)
	}
	return n.Agent, nil
}

// object answers one guest-agent subresource in KubeVirt's shape, from the
// agent running the VMI.
func (g clusterGuestInfo) object(ctx context.Context, verb, namespace, name string) (any, error) {
	a, err := g.agent(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return a.GuestInfoObject(verb, namespace, name)
}

func (g clusterGuestInfo) GuestOSInfo(ctx context.Context, namespace, name string) (any, error) {
	return g.object(ctx, "guestosinfo", namespace, name)
}

func (g clusterGuestInfo) UserList(ctx context.Context, namespace, name string) (any, error) {
	return g.object(ctx, "userlist", namespace, name)
}

func (g clusterGuestInfo) FilesystemList(ctx context.Context, namespace, name string) (any, error) {
	return g.object(ctx, "filesystemlist", namespace, name)
}
