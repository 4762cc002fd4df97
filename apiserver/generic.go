package apiserver

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

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
	apicorev1 "github.com/virtkit/virtkit/apiserver/corev1"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/apiserver/openapi"
	"github.com/virtkit/virtkit/apiserver/rbac"
	"github.com/virtkit/virtkit/apiserver/subresources"
	"github.com/virtkit/virtkit/store"
)

// GenericKubeVersion is the Kubernetes version the generic server reports
// at /version and whose API it serves.
const GenericKubeVersion = "1.37.0"

// GenericOptions configures NewGeneric. Store is required; the zero value
// of every other field works.
type GenericOptions struct {
	// Store holds the objects served: the store virtkit's controllers and
	// node agents use, so that both sides see the same data. A
	// *store.Memory must be created with store.Options.StartResourceVersion
	// of 1 or more (Kubernetes reads resourceVersion 0 as "any").
	Store kubestorage.Backend
	// Defaults are applied to every object a client writes, before
	// validation (KubeVirt's mutating webhooks' role).
	Defaults virtkit.DefaultOptions
	// Authenticator identifies the client of a request (client
	// certificates, bearer tokens); nil refuses every request with 401
	// Unauthorized but a GET of the health checks and /version, which
	// anyone may read (as system:anonymous).
	Authenticator Authenticator
	// Authorizer decides requests the members of AdminGroup do not make;
	// nil is the RBAC authorizer of rbac.Bootstrap(). When it also
	// resolves rules (authorizer.RuleResolver, as *rbac.Authorizer does),
	// it answers `kubectl auth can-i --list`.
	Authorizer authorizer.Authorizer
	// GuestInfo answers the guestosinfo, userlist and filesystemlist
	// subresources; nil answers them through the node agents' endpoints
	// (NodeTLS). NodeTLS, when set, lets the server reach the node agents'
	// endpoints (the URL in each Node's NodeEndpointAnnotation) for the
	// console, vnc and portforward streams: a client certificate (common
	// name NodeClientUser) signed by the CA the agents trust, and RootCAs
	// verifying them; nil answers those with 503 Service Unavailable.
	// MaxStreams and MaxStreamsPerUser bound the streams open at once, in
	// total and per user (0: DefaultMaxStreams, DefaultMaxStreamsPerUser);
	// one more is refused with 429 Too Many Requests.
	GuestInfo                     GuestInfo
	NodeTLS                       *tls.Config
	MaxStreams, MaxStreamsPerUser int
	// MaxWatchesPerUser bounds the watches one user has open at once (0:
	// DefaultMaxWatchesPerUser); one more is refused with 429 Too Many
	// Requests and Retry-After, and a slot is freed when a watch ends.
	// Watches are long-running, so the in-flight bounds do not count
	// them. Members of AdminGroup are not counted.
	MaxWatchesPerUser int
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight bound the
	// requests served at once (kube-apiserver's --max-requests-inflight
	// and --max-mutating-requests-inflight); 0 is the library's default.
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	// RequestTimeout bounds a request that is not a watch or stream; 0 is
	// the library's default (60s).
	RequestTimeout time.Duration
	// MaxRequestBytes bounds a request body; 0 is DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxConnections bounds the connections Serve keeps open at once; 0 is
	// DefaultMaxConnections.
	MaxConnections int
	// Logger receives the server's errors; nil discards.
	Logger *slog.Logger
	// Clock is the clock of the AGE column; nil is the real clock.
	Clock clock.PassiveClock
	// Version is the gitVersion of the version subresource of
	// subresources.kubevirt.io; "" is the build's.
	Version string
	// UploadTokens, when set, serves CDI's upload.cdi.kubevirt.io group:
	// creating an uploadtokenrequests object in a namespace returns a token
	// for an upload to the claim its spec.pvcName names (virtctl
	// image-upload), to present to the upload proxy (cdi/upload).
	UploadTokens UploadTokenIssuer
	// UploadProxyURL, when set, is served as the status.uploadProxyURL of
	// cdi.kubevirt.io's CDIConfig "config" (get and list of cdiconfigs),
	// where virtctl image-upload looks for the upload proxy when it is not
	// given --uploadproxy-url.
	UploadProxyURL string
	// WatchCache puts the library's watch cache in front of every
	// resource's storage, as kube-apiserver does: watches are served from
	// memory and get periodic bookmarks (about once a minute) when they
	// ask for them (allowWatchBookmarks). Without it watches read the
	// store directly and get only the bookmark that ends their initial
	// events.
	WatchCache bool
	// Registerer receives the server's own metrics
	// (virtkit_apiserver_watches_refused_total); nil registers none. The
	// library's metrics (apiserver_request_total and the others) are
	// in k8s.io/component-base's global legacyregistry, as in kube-apiserver.
	Registerer prometheus.Registerer
}

// GenericServer serves virtkit's API through Kubernetes' generic API
// server library (k8s.io/apiserver): kubevirt.io/v1 and every other group
// of virtkit's kinds as registry.Stores over the store (apiserver/
// kubestorage), the core v1 group (apiserver/corev1), the review APIs
// (apiserver/rbac), subresources.kubevirt.io (apiserver/subresources),
// discovery and OpenAPI v2 and v3. It is an http.Handler once started
// (Start); Serve starts it and serves it over TLS.
type GenericServer struct {
	opts     GenericOptions
	server   *genericapiserver.GenericAPIServer
	loopback *pipeListener
	factory  informers.SharedInformerFactory

	startOnce sync.Once
	startErr  error
}

// NewGeneric checks opts and builds a GenericServer; nothing runs until
// Start or Serve.
func NewGeneric(opts GenericOptions) (*GenericServer, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: Store is required", ErrOptions)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	if opts.MaxWatchesPerUser <= 0 {
		opts.MaxWatchesPerUser = DefaultMaxWatchesPerUser
	}
	refused, err := newWatchesRefused(opts.Registerer)
	if err != nil {
		return nil, err
	}
	authz := opts.Authorizer
	if authz == nil {
		a, err := rbac.New(rbac.Bootstrap())
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrOptions, err)
		}
		authz = a
	}
	token, err := newLoopbackToken()
	if err != nil {
		return nil, err
	}
	g := &GenericServer{opts: opts, loopback: newPipeListener()}
	loopback := &restclient.Config{Host: "http://loopback", BearerToken: token, Dial: g.loopback.DialContext, QPS: -1}
	client, err := kubernetes.NewForConfig(loopback)
	if err != nil {
		return nil, err
	}
	g.factory = informers.NewSharedInformerFactory(client, 0)

	kinds, err := genericKinds()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	scheme, err := newGenericScheme(kinds)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	codecs := serializer.NewCodecFactory(scheme)
	cfg := genericapiserver.NewConfig(codecs)
	cfg.LoopbackClientConfig = loopback
	// Discovery's serverAddressByClientCIDRs; clients keep the address they dial.
	cfg.ExternalAddress = "127.0.0.1:443"
	cfg.EffectiveVersion = basecompatibility.NewEffectiveVersionFromString(GenericKubeVersion, "", "")
	namer, err := openAPIScheme(kinds)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	cfg.OpenAPIConfig, cfg.OpenAPIV3Config = openapi.Config(namer)
	cfg.Authentication.Authenticator = group.NewAuthenticatedGroupAdder(requestAuthenticator{loopbackToken: token, authn: opts.Authenticator})
	serverAuthz, err := union.New(
		union.NamedAuthorizer{AuthorizerName: "privileged", Authorizer: authorizerfactory.NewPrivilegedGroups(AdminGroup)},
		union.NamedAuthorizer{AuthorizerName: "rbac", Authorizer: authz})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	cfg.Authorization.Authorizer = serverAuthz
	ns, err := lifecycle.NewLifecycle(sets.New(virtkit.SystemNamespaces()...))
	if err != nil {
		return nil, err
	}
	ns.SetExternalKubeClientSet(client)
	ns.SetExternalKubeInformerFactory(g.factory)
	if err := ns.ValidateInitialization(); err != nil {
		return nil, err
	}
	cfg.AdmissionControl = ns
	if opts.MaxRequestsInFlight > 0 {
		cfg.MaxRequestsInFlight = opts.MaxRequestsInFlight
	}
	if opts.MaxMutatingRequestsInFlight > 0 {
		cfg.MaxMutatingRequestsInFlight = opts.MaxMutatingRequestsInFlight
	}
	if opts.RequestTimeout > 0 {
		cfg.RequestTimeout = opts.RequestTimeout
	}
	cfg.MaxRequestBodyBytes = opts.MaxRequestBytes
	cfg.LongRunningFunc = longRunningRequest
	started := time.Now()
	cfg.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		if opts.UploadProxyURL != "" {
			h = withCDIConfig(h, opts.UploadProxyURL, started)
		}
		// Innermost filter: after authentication, impersonation and
		// authorization.
		return genericapiserver.DefaultBuildHandlerChain(withWatchLimit(h, opts.MaxWatchesPerUser, c.Serializer, refused), c)
	}

	s, err := cfg.Complete(g.factory).New("virtkit", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("apiserver: generic server: %w", err)
	}
	if err := installGroups(s, opts, kinds, scheme, codecs, serverAuthz, authz); err != nil {
		s.Destroy()
		return nil, err
	}
	if err := installSubresources(s, opts); err != nil {
		s.Destroy()
		return nil, err
	}
	if err := installUploadTokens(s, opts.UploadTokens); err != nil {
		s.Destroy()
		return nil, err
	}
	s.PrepareRun()
	g.server = s
	return g, nil
}

// openAPIScheme is the scheme the OpenAPI definitions are named with: every
// kind served, so each carries its x-kubernetes-group-version-kind.
func openAPIScheme(kinds []*genericKind) (*runtime.Scheme, error) {
	s, err := newGenericScheme(kinds)
	if err != nil {
		return nil, err
	}
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, authorizationv1.AddToScheme, authenticationv1.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// installGroups installs the core v1 group, virtkit's groups and the
// review APIs.
func installGroups(s *genericapiserver.GenericAPIServer, opts GenericOptions, kinds []*genericKind, scheme *runtime.Scheme,
	codecs serializer.CodecFactory, serverAuthz, authz authorizer.Authorizer) error {
	coreScheme, err := apicorev1.NewScheme()
	if err != nil {
		return err
	}
	coreCodecs := serializer.NewCodecFactory(coreScheme)
	core, err := apicorev1.NewAPIGroupInfo(apicorev1.Options{
		RESTOptions: restOptions(opts, kubestorage.Options{
			Codec: coreCodecs.LegacyCodec(apicorev1.GroupVersion), EnableGarbageCollection: true}),
		Store: opts.Store,
		Clock: opts.Clock,
	})
	if err != nil {
		return err
	}
	if err := s.InstallLegacyAPIGroup(genericapiserver.DefaultLegacyAPIPrefix, &core); err != nil {
		return fmt.Errorf("apiserver: install core v1: %w", err)
	}

	gvs := groupsOf(kinds)
	getter := restOptions(opts, kubestorage.Options{Codec: codecs.LegacyCodec(gvs...), EnableGarbageCollection: true})
	chain := admission.New(admission.Options{Defaults: opts.Defaults, Lookup: opts.Store})
	var infos []*genericapiserver.APIGroupInfo
	for _, gv := range gvs {
		info := genericapiserver.NewDefaultAPIGroupInfo(gv.Group, scheme, runtime.NewParameterCodec(scheme), codecs)
		storage := map[string]rest.Storage{}
		for _, k := range kinds {
			if k.gvk.GroupVersion() != gv {
				continue
			}
			m, err := newKindStorage(k, scheme, getter, chain, opts.Clock)
			if err != nil {
				return err
			}
			for name, st := range m {
				storage[name] = st
			}
		}
		info.VersionedResourcesStorageMap[gv.Version] = storage
		infos = append(infos, &info)
	}
	if err := s.InstallAPIGroups(infos...); err != nil {
		return fmt.Errorf("apiserver: install virtkit's groups: %w", err)
	}

	resolver, ok := authz.(authorizer.RuleResolver)
	if !ok {
		resolver = noRules{}
	}
	// The review groups are installed one by one: a scheme's version
	// priority takes one group at a time.
	rs, err := rbac.NewScheme()
	if err != nil {
		return err
	}
	authzInfo := rbac.AuthorizationAPIGroupInfo(rs, serverAuthz, resolver)
	if err := s.InstallAPIGroup(&authzInfo); err != nil {
		return fmt.Errorf("apiserver: install %s: %w", authorizationv1.GroupName, err)
	}
	authnInfo := rbac.AuthenticationAPIGroupInfo(rs)
	if err := s.InstallAPIGroup(&authnInfo); err != nil {
		return fmt.Errorf("apiserver: install %s: %w", authenticationv1.GroupName, err)
	}
	return nil
}

// restOptions is the storage of every resource: kubestorage over the
// store, behind the watch cache when opts asks for it.
func restOptions(opts GenericOptions, ko kubestorage.Options) generic.RESTOptionsGetter {
	getter := kubestorage.RESTOptionsGetter(opts.Store, ko)
	if opts.WatchCache {
		return watchCacheGetter{RESTOptionsGetter: getter, clock: clock.RealClock{}}
	}
	return getter
}

// installSubresources mounts subresources.kubevirt.io (virtctl's verbs,
// console, vnc and port-forward streams) and adds it to discovery. The
// filter chain has authenticated and authorized each request already.
func installSubresources(s *genericapiserver.GenericAPIServer, opts GenericOptions) error {
	h, err := subresources.New(subresources.Options{
		Store: opts.Store, GuestInfo: opts.GuestInfo, NodeTLS: opts.NodeTLS,
		MaxStreams: opts.MaxStreams, MaxStreamsPerUser: opts.MaxStreamsPerUser, MaxRequestBytes: opts.MaxRequestBytes,
		Logger: opts.Logger, Version: opts.Version,
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrOptions, err)
	}
	prefix := "/apis/" + subresources.GroupName
	s.Handler.NonGoRestfulMux.Handle(prefix, h)
	s.Handler.NonGoRestfulMux.UnlistedHandlePrefix(prefix+"/", h)
	s.DiscoveryGroupManager.AddGroup(subresources.APIGroup())
	d, err := subresources.APIVersionDiscovery()
	if err != nil {
		return err
	}
	s.AggregatedDiscoveryGroupManager.AddGroupVersion(subresources.GroupName, d)
	return nil
}

// longRunningRequest is the library's check (watches) plus the streams of
// subresources.kubevirt.io: neither is bounded by the request timeout nor
// counted in flight.
func longRunningRequest(r *http.Request, ri *request.RequestInfo) bool {
	if ri != nil && ri.IsResourceRequest && ri.APIGroup == subresources.GroupName {
		switch ri.Subresource {
		case "console", "vnc", "portforward":
			return true
		}
	}
	return genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch"), sets.NewString("proxy"))(r, ri)
}

// noRules answers rules reviews of an authorizer that cannot list its
// rules: none, incomplete.
type noRules struct{}

func (noRules) RulesFor(context.Context, user.Info, string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	return nil, nil, true, errors.New("the authorizer cannot list its rules")
}

// Start starts what the server needs before it can answer: its in-process
// loopback (its admission plugins' informers read namespaces through it),
// the informers, and the post-start hooks. It returns once the informers
// have synced; everything stops when ctx ends. Calling it again returns
// the first call's result.
func (g *GenericServer) Start(ctx context.Context) error {
	g.startOnce.Do(func() { g.startErr = g.start(ctx) })
	return g.startErr
}

func (g *GenericServer) start(ctx context.Context) error {
	var namespaces corev1.NamespaceList
	if err := g.opts.Store.List(ctx, &namespaces, store.ListOptions{}); err != nil {
		return fmt.Errorf("apiserver: the store: %w", err)
	}
	if namespaces.ResourceVersion == "0" {
		return fmt.Errorf("%w: Store: at resourceVersion 0, which Kubernetes reads as \"any\": "+
			"create a memory store with store.Options.StartResourceVersion of 1 or more", ErrOptions)
	}
	hs := &http.Server{Handler: g.server.Handler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() { _ = hs.Serve(g.loopback) }()
	go func() {
		<-ctx.Done()
		_ = g.loopback.Close()
		_ = hs.Close()
		g.factory.Shutdown()
		g.server.Destroy()
	}()
	g.server.RunPostStartHooks(ctx)
	g.factory.Start(ctx.Done())
	for typ, ok := range g.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("apiserver: informer of %v did not sync: %w", typ, context.Cause(ctx))
		}
	}
	return nil
}

// DialLoopback connects to the server's in-process loopback (no port);
// Start must have been called. A client that dials through it still
// authenticates as Authenticator says.
func (g *GenericServer) DialLoopback(ctx context.Context, network, addr string) (net.Conn, error) {
	return g.loopback.DialContext(ctx, network, addr)
}

// ServeHTTP serves one request; Start must have been called.
func (g *GenericServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.server.Handler.ServeHTTP(w, r)
}

// Serve starts the server (Start) and serves the API over TLS on ln until
// ctx ends. tlsConfig must hold the serving certificate; to authenticate
// client certificates it must verify them (Certificates.ServerTLSConfig
// does).
func (g *GenericServer) Serve(ctx context.Context, ln net.Listener, tlsConfig *tls.Config) error {
	if tlsConfig == nil || (len(tlsConfig.Certificates) == 0 && tlsConfig.GetCertificate == nil) {
		return fmt.Errorf("%w: a TLS serving certificate is required", ErrOptions)
	}
	if err := g.Start(ctx); err != nil {
		return err
	}
	hs := &http.Server{
		Handler:           g.server.Handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(g.opts.Logger.Handler(), slog.LevelDebug),
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			_ = hs.Close()
		}
	}()
	err := hs.Serve(tls.NewListener(&limitListener{Listener: ln, max: g.opts.MaxConnections}, tlsConfig))
	cancel()
	<-done
	if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
