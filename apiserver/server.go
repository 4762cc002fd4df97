package apiserver

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/version"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver/subresources"
	"github.com/virtkit/virtkit/store"
)

// Defaults of Options.
const (
	DefaultBookmarkInterval = 30 * time.Second
	DefaultMaxRequestBytes  = 3 << 20
	DefaultMaxWatchTimeout  = 30 * time.Minute
	// AdminGroup is the group whose members may do everything.
	AdminGroup = "system:masters"
	// ControlPlaneGroup is the group of virtkit's controllers and
	// scheduler when they use the API: its members may do everything, and
	// only they place a VMI (status.nodeName).
	ControlPlaneGroup = "system:virtkit:control-plane"
	// NodesGroup is the group of node agents; each one's user is
	// NodeUser(its node's name).
	NodesGroup = "system:nodes"
	// NodeUserPrefix starts a node agent's user name: system:node:NAME.
	NodeUserPrefix = "system:node:"
)

// ErrOptions wraps every error New returns for bad Options.
var ErrOptions = errors.New("apiserver: bad options")

// Options configures a Server. Store is required; the zero value of every
// other field works.
type Options struct {
	// Store holds the objects served.
	Store store.Store
	// Kinds are the kinds served (each becomes a resource named by its
	// lower-case plural); nil serves store.DefaultKinds().
	Kinds []store.Kind
	// Defaults are applied to every object a client writes, before
	// validation (KubeVirt's mutating webhooks' role).
	Defaults virtkit.DefaultOptions
	// Authenticator identifies the client of a request; nil refuses every
	// request but the health checks with Unauthorized.
	Authenticator Authenticator
	// Authorizer decides whether a user may do a request; nil lets every
	// authenticated user do everything. The admission of status writes
	// (node agents write only their VMIs' and Node's status, a VMI's
	// status.nodeName is the control plane's) applies with any Authorizer.
	Authorizer Authorizer
	// Logger receives request errors; nil discards.
	Logger *slog.Logger
	// Now is the clock of the AGE column; nil is time.Now.
	Now func() time.Time
	// BookmarkInterval is how often a watch that asked for bookmarks gets
	// one; 0 is DefaultBookmarkInterval.
	BookmarkInterval time.Duration
	// MaxRequestBytes bounds a request body; 0 is DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxWatchTimeout bounds a watch's life (clients re-watch);
	// 0 is DefaultMaxWatchTimeout.
	MaxWatchTimeout time.Duration
	// GuestInfo answers the guestosinfo, userlist and filesystemlist
	// subresources; nil answers them with 409 Conflict.
	GuestInfo GuestInfo
	// NodeTLS, when set, lets the server reach the node agents' endpoints
	// (the URL in each Node's NodeEndpointAnnotation) for the console, vnc
	// and portforward streams and, when GuestInfo is nil, the guest-agent
	// subresources: a client certificate (common name NodeClientUser)
	// signed by the CA the agents trust, and RootCAs verifying them. nil
	// answers those with 503 Service Unavailable.
	NodeTLS *tls.Config
	// MaxStreams bounds the console, vnc and portforward streams open at
	// once; 0 is DefaultMaxStreams. A stream over a bound is refused with
	// 429 Too Many Requests.
	MaxStreams int
	// MaxStreamsPerUser bounds one user's streams open at once; 0 is
	// DefaultMaxStreamsPerUser.
	MaxStreamsPerUser int
	// MaxRequestsInFlight bounds the requests served at once, watches and
	// streams apart (kube-apiserver's --max-requests-inflight); more are
	// refused with 429 Too Many Requests. 0 is DefaultMaxRequestsInFlight.
	MaxRequestsInFlight int
	// MaxWatches bounds the watches open at once, and MaxWatchesPerUser
	// one user's; more are refused with 429 Too Many Requests. 0 is
	// DefaultMaxWatches, DefaultMaxWatchesPerUser.
	MaxWatches, MaxWatchesPerUser int
	// MaxConnections bounds the connections Serve keeps open at once; it
	// closes those over the bound. 0 is DefaultMaxConnections.
	MaxConnections int
	// RequestBodyTimeout bounds the reading of a request body; 0 is
	// DefaultRequestBodyTimeout.
	RequestBodyTimeout time.Duration
	// Version is what /version reports as gitVersion; "" is "v1.37.0-virtkit".
	Version string
}

// Server serves a store over the Kubernetes REST protocol. It is an
// http.Handler; Serve runs it over TLS.
type Server struct {
	opts      Options
	log       *slog.Logger
	resources map[schema.GroupVersionResource]*resource
	groups    []schema.GroupVersion // sorted by group
	scheme    *runtime.Scheme
	codec     runtime.Serializer
	// subresources serves subresources.kubevirt.io.
	subresources *subresources.Handler
	watches      *subresources.Limiter
	inFlight     *inFlight
}

// New checks opts and returns a Server.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: Store is required", ErrOptions)
	}
	if opts.Kinds == nil {
		// The core kinds (v1 ConfigMap, Secret, ServiceAccount) belong
		// under /api/v1, which this server does not serve: they are left
		// out rather than served under a group with no name.
		for _, k := range store.DefaultKinds() {
			if !strings.Contains(k.APIVersion, "/") {
				continue
			}
			opts.Kinds = append(opts.Kinds, k)
		}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.BookmarkInterval <= 0 {
		opts.BookmarkInterval = DefaultBookmarkInterval
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.MaxWatchTimeout <= 0 {
		opts.MaxWatchTimeout = DefaultMaxWatchTimeout
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.MaxStreamsPerUser <= 0 {
		opts.MaxStreamsPerUser = DefaultMaxStreamsPerUser
	}
	if opts.MaxRequestsInFlight <= 0 {
		opts.MaxRequestsInFlight = DefaultMaxRequestsInFlight
	}
	if opts.MaxWatches <= 0 {
		opts.MaxWatches = DefaultMaxWatches
	}
	if opts.MaxWatchesPerUser <= 0 {
		opts.MaxWatchesPerUser = DefaultMaxWatchesPerUser
	}
	if opts.MaxConnections <= 0 {
		opts.MaxConnections = DefaultMaxConnections
	}
	if opts.RequestBodyTimeout <= 0 {
		opts.RequestBodyTimeout = DefaultRequestBodyTimeout
	}
	if opts.Version == "" {
		opts.Version = "v1.37.0-virtkit"
	}
	res, err := newResources(opts.Kinds)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	addCoreEvents(res)
	sub, err := newSubresources(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	s := &Server{opts: opts, log: opts.Logger, resources: res, scheme: runtime.NewScheme(), subresources: sub,
		watches:  subresources.NewLimiter(opts.MaxWatches, opts.MaxWatchesPerUser, "watches"),
		inFlight: newInFlight(opts.MaxRequestsInFlight)}
	seen := map[schema.GroupVersion]bool{}
	for _, r := range res {
		gv := r.gvk.GroupVersion()
		if r.view != nil {
			continue // written by its view, never decoded
		}
		s.scheme.AddKnownTypeWithName(r.gvk, r.kind.New())
		s.scheme.AddKnownTypeWithName(gv.WithKind(r.gvk.Kind+"List"), r.newList())
		if !seen[gv] {
			seen[gv] = true
			metav1.AddToGroupVersion(s.scheme, gv)
			s.groups = append(s.groups, gv)
		}
	}
	metav1.AddToGroupVersion(s.scheme, schema.GroupVersion{Version: "v1"})
	if err := metav1.AddMetaToScheme(s.scheme); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	sort.Slice(s.groups, func(i, j int) bool { return s.groups[i].String() < s.groups[j].String() })
	s.codec = json.NewSerializerWithOptions(json.DefaultMetaFactory, s.scheme, s.scheme, json.SerializerOptions{})
	return s, nil
}

// requestInfo is what the path and method of a request address.
type requestInfo struct {
	verb        string
	res         *resource
	namespace   string
	name        string
	subresource string
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz", "/readyz", "/livez":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
		return
	}
	user, err := s.authenticate(r)
	if err != nil {
		s.writeError(w, r, apierrors.NewUnauthorized(err.Error()))
		return
	}
	ctx := withUser(r.Context(), user)
	r = r.WithContext(ctx)
	if !longRunning(r) {
		release, ok := s.inFlight.acquire()
		if !ok {
			s.writeError(w, r, tooManyRequests(fmt.Sprintf("the server is serving %d requests, its limit", s.opts.MaxRequestsInFlight)))
			return
		}
		defer release()
		s.setBodyDeadline(w, r)
	}
	if isSubresourcesPath(r.URL.Path) {
		s.serveSubresources(w, r, user)
		return
	}
	if s.serveDiscovery(w, r) || s.serveOpenAPI(w, r) {
		return
	}
	info, err := s.parse(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.authorize(ctx, user, info); err != nil {
		s.writeError(w, r, err)
		return
	}
	if info.verb == "create" || info.verb == "update" {
		if err := checkBodyType(r, info); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if info.subresource == "scale" {
		s.serveScale(w, r, info)
		return
	}
	if info.verb == "watch" {
		release, err := s.watches.Acquire(user.Name)
		if err != nil {
			s.writeError(w, r, tooManyRequests("watch: "+err.Error()))
			return
		}
		defer release()
	}
	switch info.verb {
	case "get":
		s.get(w, r, info)
	case "list":
		s.list(w, r, info)
	case "watch":
		s.watch(w, r, info)
	case "create":
		s.create(w, r, info)
	case "update":
		s.update(w, r, info)
	case "patch":
		s.patch(w, r, info)
	case "delete":
		s.delete(w, r, info)
	default:
		s.writeError(w, r, apierrors.NewMethodNotSupported(info.res.groupResource(), info.verb))
	}
}

// parse maps /apis/GROUP/VERSION/[namespaces/NS/]RESOURCE[/NAME[/SUB]] to
// a request.
func (s *Server) parse(r *http.Request) (*requestInfo, error) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var gv schema.GroupVersion
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		gv, rest = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		gv, rest = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return nil, apierrors.NewNotFound(schema.GroupResource{}, r.URL.Path)
	}
	info := &requestInfo{}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		info.namespace = rest[1]
		rest = rest[2:]
	}
	res, ok := s.resources[gv.WithResource(rest[0])]
	if !ok || len(rest) > 3 {
		return nil, apierrors.NewNotFound(gv.WithResource(rest[0]).GroupResource(), "")
	}
	info.res = res
	if res.namespaced != (info.namespace != "") && !(res.namespaced && len(rest) == 1 && r.Method == http.MethodGet) {
		if res.namespaced {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s is namespaced: use /apis/%s/namespaces/NAMESPACE/%s", res.plural, gv, res.plural))
		}
		return nil, apierrors.NewNotFound(res.groupResource(), "")
	}
	if len(rest) >= 2 {
		info.name = rest[1]
	}
	if len(rest) == 3 {
		info.subresource = rest[2]
		if !(info.subresource == "status" && res.hasStatus || info.subresource == "scale" && hasScale(res)) {
			return nil, apierrors.NewNotFound(res.groupResource(), info.name+"/"+info.subresource)
		}
	}
	q := r.URL.Query()
	watch := q.Get("watch") == "true" || q.Get("watch") == "1"
	switch r.Method {
	case http.MethodGet:
		switch {
		case watch:
			info.verb = "watch"
		case info.name == "":
			info.verb = "list"
		default:
			info.verb = "get"
		}
	case http.MethodPost:
		info.verb = "create"
		if info.name != "" {
			return nil, apierrors.NewMethodNotSupported(res.groupResource(), "create with a name in the path")
		}
	case http.MethodPut:
		info.verb = "update"
	case http.MethodPatch:
		info.verb = "patch"
	case http.MethodDelete:
		info.verb = "delete"
		if info.name == "" {
			info.verb = "deletecollection"
		}
	default:
		return nil, apierrors.NewMethodNotSupported(res.groupResource(), r.Method)
	}
	if res.readOnly && !slices.Contains(readOnlyVerbs, info.verb) {
		return nil, apierrors.NewMethodNotSupported(res.groupResource(), info.verb)
	}
	if info.name == "" && (info.verb == "update" || info.verb == "patch") {
		return nil, apierrors.NewMethodNotSupported(res.groupResource(), info.verb+" without a name")
	}
	return info, nil
}

// serveDiscovery answers /version, /api and /apis; false if the path is
// none of them.
func (s *Server) serveDiscovery(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/version":
		s.writeJSONValue(w, http.StatusOK, version.Info{
			Major: "1", Minor: "37", GitVersion: s.opts.Version, Platform: "linux/amd64",
			GoVersion: "go", Compiler: "gc",
		})
	case p == "/api/"+coreGV.Version && s.servesCore():
		s.writeObject(w, r, http.StatusOK, s.resourceList(coreGV))
	case p == "/api":
		versions := []string{}
		if s.servesCore() {
			versions = append(versions, coreGV.Version)
		}
		s.writeObject(w, r, http.StatusOK, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			// The core group holds the read-only view of events only.
			Versions: versions,
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
				{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
			},
		})
	case p == "/apis":
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, gv := range s.groups {
			list.Groups = append(list.Groups, apiGroup(gv))
		}
		list.Groups = append(list.Groups, subresources.APIGroup())
		s.writeObject(w, r, http.StatusOK, list)
	case strings.HasPrefix(p, "/apis/") && strings.Count(p, "/") <= 3:
		parts := strings.Split(strings.TrimPrefix(p, "/apis/"), "/")
		for _, gv := range s.groups {
			if gv.Group != parts[0] {
				continue
			}
			if len(parts) == 1 {
				g := apiGroup(gv)
				g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
				s.writeObject(w, r, http.StatusOK, &g)
				return true
			}
			if parts[1] == gv.Version {
				s.writeObject(w, r, http.StatusOK, s.resourceList(gv))
				return true
			}
		}
		s.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{}, p))
	default:
		return false
	}
	return true
}

func apiGroup(gv schema.GroupVersion) metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
	return metav1.APIGroup{Name: gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
}

func (s *Server) resourceList(gv schema.GroupVersion) *metav1.APIResourceList {
	out := &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
		GroupVersion: gv.String(),
	}
	verbs := metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	for _, r := range s.resources {
		if r.gvk.GroupVersion() != gv {
			continue
		}
		rverbs := verbs
		if r.readOnly {
			rverbs = readOnlyVerbs
		}
		out.APIResources = append(out.APIResources, metav1.APIResource{
			Name: r.plural, SingularName: r.singular, Namespaced: r.namespaced, Kind: r.gvk.Kind,
			Verbs: rverbs, ShortNames: r.shortNames, Categories: categoriesOf(r.gvk.Kind),
		})
		if r.hasStatus {
			out.APIResources = append(out.APIResources, metav1.APIResource{
				Name: r.plural + "/status", Namespaced: r.namespaced, Kind: r.gvk.Kind,
				Verbs: metav1.Verbs{"get", "patch", "update"},
			})
		}
		if hasScale(r) {
			out.APIResources = append(out.APIResources, scaleResource(r))
		}
	}
	sort.Slice(out.APIResources, func(i, j int) bool { return out.APIResources[i].Name < out.APIResources[j].Name })
	return out
}

// categoriesOf returns the categories of a kind: KubeVirt's and CDI's kinds
// are in "all" (kubectl get all), as their CRDs declare; Events and Nodes
// are not.
func categoriesOf(kind string) []string {
	switch kind {
	case virtkit.KindEvent, virtkit.KindNode:
		return nil
	}
	return []string{"all"}
}
