package subresources

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/virtkit/virtkit/store"
)

// GroupName is the API group of virtctl's subresources; Version its only
// version.
const (
	GroupName = "subresources.kubevirt.io"
	Version   = "v1"
)

// SchemeGroupVersion is subresources.kubevirt.io/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

// Defaults of Options.
const (
	// DefaultMaxStreams and DefaultMaxStreamsPerUser bound the streams
	// open at once: each holds a goroutine pair, two WebSockets and a
	// connection to a node agent for as long as it lasts.
	DefaultMaxStreams        = 512
	DefaultMaxStreamsPerUser = 64
	// DefaultMaxRequestBytes bounds an action's options body, as
	// kube-apiserver bounds request bodies.
	DefaultMaxRequestBytes = 3 << 20
	// DefaultVersion is the gitVersion of the version subresource when
	// neither the build information nor Options.Version gives one.
	DefaultVersion = "v0.0.0-virtkit"
)

// ErrOptions wraps every error New returns for bad Options.
var ErrOptions = errors.New("subresources: bad options")

// Options configures a Handler. Store is required; the zero value of every
// other field works.
type Options struct {
	// Store holds the VMs, VMIs and Nodes the subresources act on.
	Store store.Store
	// Authorizer decides each request with the attributes kube-apiserver
	// builds for it (verb get or update, group subresources.kubevirt.io,
	// resource virtualmachineinstances, subresource console, ...); nil
	// allows every authenticated user, for a server whose filter chain
	// already authorized the request.
	Authorizer authorizer.Authorizer
	// GuestInfo answers the guestosinfo, userlist and filesystemlist
	// subresources; nil asks the node agent's endpoint when NodeTLS is set
	// and answers 409 Conflict otherwise.
	GuestInfo GuestInfo
	// NodeTLS, when set, lets the handler reach the node agents' endpoints
	// (the URL in each Node's NodeEndpointAnnotation): a client certificate
	// (common name NodeClientUser) signed by the CA the agents trust, and
	// RootCAs verifying them. nil answers streams and screenshots with 503
	// Service Unavailable.
	NodeTLS *tls.Config
	// MaxStreams bounds the console, vnc and portforward streams open at
	// once, MaxStreamsPerUser one user's; a stream over a bound is refused
	// with 429 Too Many Requests. 0 is DefaultMaxStreams,
	// DefaultMaxStreamsPerUser.
	MaxStreams, MaxStreamsPerUser int
	// MaxRequestBytes bounds an action's body; 0 is DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// Logger receives failed requests (5xx) and ended streams; nil
	// discards.
	Logger *slog.Logger
	// Version is the version subresource's gitVersion when the binary's
	// build information has no module version; "" is DefaultVersion.
	Version string
}

// Handler serves /apis/subresources.kubevirt.io: discovery, virtctl's
// actions and the streams. The request's user comes from its context
// (request.UserFrom), as a generic API server's authentication filter
// puts it there.
type Handler struct {
	opts    Options
	log     *slog.Logger
	nodes   *nodeClients // nil without Options.NodeTLS
	streams *Limiter
}

var _ http.Handler = (*Handler)(nil)

// New checks opts and returns a Handler.
func New(opts Options) (*Handler, error) {
	if opts.Store == nil {
		return nil, fmt.Errorf("%w: Store is required", ErrOptions)
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.MaxStreamsPerUser <= 0 {
		opts.MaxStreamsPerUser = DefaultMaxStreamsPerUser
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	return &Handler{opts: opts, log: opts.Logger, nodes: newNodeClients(opts.NodeTLS),
		streams: NewLimiter(opts.MaxStreams, opts.MaxStreamsPerUser, "streams")}, nil
}

// groupPrefix is the path prefix of every request the handler serves.
const groupPrefix = "/apis/" + GroupName

// ServeHTTP serves one request under /apis/subresources.kubevirt.io.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.serveDiscovery(w, r) {
		return
	}
	if !strings.HasPrefix(r.URL.Path, groupPrefix+"/"+Version+"/") {
		h.writeError(w, r, apierrors.NewNotFound(schema.GroupResource{Group: GroupName}, r.URL.Path))
		return
	}
	u, ok := request.UserFrom(r.Context())
	if !ok || u == nil {
		h.writeError(w, r, apierrors.NewUnauthorized("no user in the request's context"))
		return
	}
	if req, ok := parseStream(r.URL.Path); ok {
		h.serveStream(w, r, u, req)
		return
	}
	if req, ok := parseScreenshot(r.URL.Path); ok {
		h.serveScreenshot(w, r, u, req)
		return
	}
	h.serveAction(w, r, u)
}

// authorize asks the Authorizer about a request on a resource of the
// group; the error is the Forbidden status to answer.
func (h *Handler) authorize(r *http.Request, u user.Info, verb, namespace, resource, subresource, name string) error {
	if h.opts.Authorizer == nil {
		return nil
	}
	a := authorizer.AttributesRecord{User: u, Verb: verb, Namespace: namespace, APIGroup: GroupName, APIVersion: Version,
		Resource: resource, Subresource: subresource, Name: name, ResourceRequest: true, Path: r.URL.Path}
	decision, reason, err := h.opts.Authorizer.Authorize(r.Context(), a)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		// As kube-apiserver's authorization filter: an error without an
		// allow is the server's failure, not the user's.
		return apierrors.NewInternalError(fmt.Errorf("authorize %s %s/%s: %w", verb, resource, subresource, err))
	}
	return responsewriters.ForbiddenStatusError(a, reason)
}

// readBody reads a bounded request body.
func (h *Handler) readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, h.opts.MaxRequestBytes+1))
	if err != nil {
		return nil, apierrors.NewBadRequest("read body: " + err.Error())
	}
	if int64(len(b)) > h.opts.MaxRequestBytes {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d bytes", h.opts.MaxRequestBytes))
	}
	return b, nil
}

// writeJSON writes v as JSON.
func (h *Handler) writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		h.log.Debug("write response", "err", err)
	}
}

// writeError writes err as a metav1.Status: API errors as they are,
// anything else as InternalError.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	if st.Code >= 500 {
		h.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	h.writeJSON(w, int(st.Code), &st)
}
