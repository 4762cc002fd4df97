package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/upload"
	"github.com/virtkit/virtkit/internal/netpolicy"
	"github.com/virtkit/virtkit/store"
)

// The node endpoint is the agent's own HTTPS server (virt-handler's role):
// the API server reaches a VMI's serial console, VNC display, guest ports
// and guest-agent information through the agent of the node that runs it,
// and the upload proxy the volumes of the node's DataVolumes (the upload
// server's role).
const (
	// EndpointAnnotation is the Node annotation holding the endpoint's
	// URL (https://HOST:PORT), published by [Endpoint.Serve].
	EndpointAnnotation = "virtkit.io/node-endpoint"
	// EndpointClientUser is the client certificate common name an endpoint
	// accepts by default: the API server's identity.
	EndpointClientUser = "virtkit:apiserver"
	// StreamSubprotocol is the WebSocket subprotocol of the streams
	// (KubeVirt's): binary frames carry the raw bytes both ways.
	StreamSubprotocol = "plain.kubevirt.io"
	// EndpointPathPrefix starts every endpoint path:
	// /v1/namespaces/NS/virtualmachineinstances/NAME/VERB, VERB being
	// console, vnc, vnc/screenshot, portforward/PORT[/tcp|udp],
	// guestosinfo, userlist or filesystemlist.
	EndpointPathPrefix = "/v1/namespaces/"
)

// Endpoint errors.
var (
	// ErrEndpointOptions wraps bad EndpointOptions or TLS settings.
	ErrEndpointOptions = errors.New("node endpoint: bad options")
	// ErrNotOnThisNode: the VMI is not run by this agent.
	ErrNotOnThisNode = errors.New("vmi is not running on this node")
	// ErrNoGuestAddress: port-forward found no address to reach the guest.
	ErrNoGuestAddress = errors.New("no guest address reachable from the node")
)

// Defaults of EndpointOptions.
const (
	DefaultMaxStreams       = 64
	DefaultMaxMessageBytes  = 1 << 20
	defaultPublishInterval  = 30 * time.Second
	endpointReadHeaderLimit = 10 * time.Second
)

// EndpointOptions configure an [Endpoint]. The zero value works.
type EndpointOptions struct {
	// AllowedClients are the client certificate common names that may use
	// the endpoint; nil is [EndpointClientUser].
	AllowedClients []string
	// MaxStreams bounds concurrent streams; 0 is DefaultMaxStreams.
	MaxStreams int
	// MaxMessageBytes bounds one WebSocket message from the caller; 0 is
	// DefaultMaxMessageBytes.
	MaxMessageBytes int64
	// DialTimeout bounds connecting to a guest port or console; 0 is 10 s.
	DialTimeout time.Duration
	// AllowedNetworks are networks a port-forward may dial besides the
	// addresses the node assigned to the VMI (its network resolver's
	// leases): an address in them that status.interfaces lists (the
	// guest agent's report included) is dialled, and the address policy
	// (no loopback, link-local, metadata, unspecified or node addresses)
	// does not apply inside them. Empty: only assigned addresses, and
	// never a refused one.
	AllowedNetworks []netip.Prefix
	// Uploads, when set, takes the uploads the upload proxy forwards to
	// this node (POST /v1/namespaces/NS/datavolumes/NAME/upload, the
	// upload server's path, see cdi/upload): the node's import worker,
	// which writes the DataVolume's volume. Nil answers them 503.
	Uploads upload.Receiver
	// Logger receives stream errors; nil is the agent's.
	Logger *slog.Logger
}

// Endpoint serves the streams and guest information of an agent's VMIs to
// the API server over mutually authenticated TLS. It is an http.Handler.
type Endpoint struct {
	a      *Agent
	opts   EndpointOptions
	policy netpolicy.Policy
	log    *slog.Logger
	slots  chan struct{}

	// mu guards serveCtx, the context of Serve, which bounds the
	// conversions of async uploads (counted by conversions), and stopped,
	// set once Serve waits for them.
	mu          sync.Mutex
	serveCtx    context.Context
	stopped     bool
	conversions sync.WaitGroup
}

// Endpoint returns the agent's endpoint.
func (a *Agent) Endpoint(opts EndpointOptions) *Endpoint {
	if opts.AllowedClients == nil {
		opts.AllowedClients = []string{EndpointClientUser}
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = a.log
	}
	return &Endpoint{a: a, opts: opts, policy: netpolicy.Policy{Allowed: opts.AllowedNetworks}, log: opts.Logger.With("component", "node-endpoint"),
		slots: make(chan struct{}, opts.MaxStreams)}
}

// EndpointTLSConfig is the TLS configuration of an endpoint: it serves the
// PEM certificate and key and requires a client certificate signed by the
// PEM CA.
func EndpointTLSConfig(caPEM, certPEM, keyPEM []byte) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: serving certificate: %w", ErrEndpointOptions, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%w: CA: no PEM certificate", ErrEndpointOptions)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		NextProtos:   []string{"http/1.1"},
	}, nil
}

// Serve serves the endpoint over TLS on ln until ctx ends, and publishes
// url (how the API server reaches ln, https://HOST:PORT) in the Node's
// EndpointAnnotation, again whenever it goes missing. tlsConfig must
// require and verify client certificates (EndpointTLSConfig does).
func (e *Endpoint) Serve(ctx context.Context, ln net.Listener, tlsConfig *tls.Config, url string) error {
	if tlsConfig == nil || len(tlsConfig.Certificates) == 0 && tlsConfig.GetCertificate == nil {
		return fmt.Errorf("%w: a TLS serving certificate is required", ErrEndpointOptions)
	}
	if tlsConfig.ClientAuth != tls.RequireAndVerifyClientCert || tlsConfig.ClientCAs == nil {
		return fmt.Errorf("%w: TLS must require and verify client certificates", ErrEndpointOptions)
	}
	if !strings.HasPrefix(url, "https://") {
		return fmt.Errorf("%w: url %q: want https://HOST:PORT", ErrEndpointOptions, url)
	}
	hs := &http.Server{
		Handler:           e,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: endpointReadHeaderLimit,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	e.mu.Lock()
	e.serveCtx = ctx
	e.mu.Unlock()
	defer func() {
		cancel()
		e.mu.Lock()
		e.stopped = true
		e.mu.Unlock()
		e.conversions.Wait()
	}()
	go e.publishLoop(ctx, url)
	go func() {
		<-ctx.Done()
		_ = hs.Close()
	}()
	err := hs.Serve(tls.NewListener(ln, tlsConfig))
	if errors.Is(err, http.ErrServerClosed) || ctx.Err() != nil {
		return nil
	}
	return err
}

// publishLoop keeps url in the Node's annotation: until the first success
// (the heartbeat creates the Node) it retries quickly, then it checks
// every heartbeat interval (at most defaultPublishInterval).
func (e *Endpoint) publishLoop(ctx context.Context, url string) {
	interval := min(e.a.opts.HeartbeatInterval, defaultPublishInterval)
	retry := 50 * time.Millisecond
	published := false
	for {
		err := e.publish(ctx, url)
		if err != nil && ctx.Err() == nil {
			e.log.Debug("publish endpoint", "err", err)
		}
		published = published || err == nil
		wait := interval
		if !published {
			wait, retry = retry, min(2*retry, interval)
		}
		select {
		case <-ctx.Done():
			return
		case <-e.a.opts.Clock.After(wait):
		}
	}
}

// publish puts url on the Node when it is not there.
func (e *Endpoint) publish(ctx context.Context, url string) error {
	for range 5 {
		n := &virtkit.Node{}
		if err := e.a.opts.Store.Get(ctx, store.Key{Name: e.a.opts.NodeName}, n); err != nil {
			return err // the heartbeat creates the Node; try again later
		}
		if n.Annotations[EndpointAnnotation] == url {
			return nil
		}
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[EndpointAnnotation] = url
		err := e.a.opts.Store.Update(ctx, n)
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return fmt.Errorf("publish endpoint: %w", store.ErrConflict)
}

// authenticate accepts a verified client certificate whose common name is
// allowed.
func (e *Endpoint) authenticate(r *http.Request) (int, error) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return http.StatusUnauthorized, errors.New("a client certificate signed by the cluster CA is required")
	}
	cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
	if !slices.Contains(e.opts.AllowedClients, cn) {
		return http.StatusForbidden, fmt.Errorf("client %q may not use the node endpoint", cn)
	}
	return 0, nil
}

// endpointRequest is what an endpoint path addresses.
type endpointRequest struct {
	namespace, name, verb string
	port                  int
	protocol              string
}

// parseEndpointPath parses /v1/namespaces/NS/virtualmachineinstances/NAME/VERB[/PORT[/PROTO]].
func parseEndpointPath(p string) (endpointRequest, error) {
	rest, ok := strings.CutPrefix(p, EndpointPathPrefix)
	if !ok {
		return endpointRequest{}, fmt.Errorf("path %q: want %sNS/virtualmachineinstances/NAME/VERB", p, EndpointPathPrefix)
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 4 || parts[1] != "virtualmachineinstances" || parts[0] == "" || parts[2] == "" {
		return endpointRequest{}, fmt.Errorf("path %q: want %sNS/virtualmachineinstances/NAME/VERB", p, EndpointPathPrefix)
	}
	req := endpointRequest{namespace: parts[0], name: parts[2], verb: parts[3]}
	extra := parts[4:]
	switch req.verb {
	case "vnc":
		if len(extra) == 1 && extra[0] == "screenshot" {
			req.verb = ScreenshotVerb
		} else if len(extra) != 0 {
			return req, fmt.Errorf("path %q: only screenshot may follow vnc", p)
		}
	case "console", "guestosinfo", "userlist", "filesystemlist":
		if len(extra) != 0 {
			return req, fmt.Errorf("path %q: nothing may follow %s", p, req.verb)
		}
	case "portforward":
		port, proto, err := ParsePortForward(extra)
		if err != nil {
			return req, fmt.Errorf("path %q: %w", p, err)
		}
		req.port, req.protocol = port, proto
	default:
		return req, fmt.Errorf("path %q: unknown verb %q", p, req.verb)
	}
	return req, nil
}

// ParsePortForward parses the PORT[/PROTOCOL] of a portforward path:
// a port 1-65535 and tcp (the default) or udp.
func ParsePortForward(parts []string) (port int, protocol string, err error) {
	if len(parts) < 1 || len(parts) > 2 {
		return 0, "", errors.New("portforward: want portforward/PORT[/tcp|udp]")
	}
	port, err = strconv.Atoi(parts[0])
	if err != nil || port < 1 || port > 65535 {
		return 0, "", fmt.Errorf("portforward: port %q: want 1-65535", parts[0])
	}
	protocol = "tcp"
	if len(parts) == 2 {
		protocol = parts[1]
	}
	if protocol != "tcp" && protocol != "udp" {
		return 0, "", fmt.Errorf("portforward: protocol %q: want tcp or udp", protocol)
	}
	return port, protocol, nil
}

// ServeHTTP implements http.Handler.
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if code, err := e.authenticate(r); err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	if ns, name, ok := upload.ParseServerPath(r.URL.Path); ok {
		upload.ServeUpload(w, r, e.opts.Uploads, ns, name, e.background())
		return
	}
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	req, err := parseEndpointPath(r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	vmi, err := e.vmi(r.Context(), req)
	if err != nil {
		http.Error(w, err.Error(), errorCode(err))
		return
	}
	switch req.verb {
	case "guestosinfo", "userlist", "filesystemlist":
		e.serveGuestInfo(w, req)
	case ScreenshotVerb:
		e.serveScreenshot(w, r, req)
	default:
		e.serveStream(w, r, req, vmi)
	}
}

// background runs the conversions of async uploads on Serve's context;
// nil (convert before answering) when the endpoint is not served by Serve.
func (e *Endpoint) background() func(func(context.Context)) {
	e.mu.Lock()
	ctx := e.serveCtx
	e.mu.Unlock()
	if ctx == nil {
		return nil
	}
	return func(f func(context.Context)) {
		e.mu.Lock()
		if e.stopped {
			e.mu.Unlock()
			f(ctx) // ended: the conversion stops at once
			return
		}
		e.conversions.Add(1)
		e.mu.Unlock()
		go func() {
			defer e.conversions.Done()
			f(ctx)
		}()
	}
}

// vmi returns the VMI if this agent runs it.
func (e *Endpoint) vmi(ctx context.Context, req endpointRequest) (*virtkit.VirtualMachineInstance, error) {
	vmi := &virtkit.VirtualMachineInstance{}
	if err := e.a.opts.Store.Get(ctx, store.Key{Namespace: req.namespace, Name: req.name}, vmi); err != nil {
		return nil, fmt.Errorf("vmi %s/%s: %w", req.namespace, req.name, err)
	}
	if vmi.Status.NodeName != e.a.opts.NodeName {
		return nil, fmt.Errorf("vmi %s/%s: %w %s (status.nodeName %q)", req.namespace, req.name, ErrNotOnThisNode,
			e.a.opts.NodeName, vmi.Status.NodeName)
	}
	return vmi, nil
}

// errorCode maps an endpoint error to its HTTP status.
func errorCode(err error) int {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrNotOnThisNode), errors.Is(err, ErrNoGuestInfo), errors.Is(err, ErrNoGuestAddress):
		return http.StatusConflict
	}
	return statusForHypervisor(err)
}
