package apiserver

import (
	"context"
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/virtkit/virtkit/apiserver/subresources"
)

// The names of package subresources, kept here for this package's users.
const (
	// SubresourcesGroup is the API group of virtctl's subresources
	// (version v1).
	SubresourcesGroup = subresources.GroupName
	// NodeEndpointAnnotation is the Node annotation with the URL of the
	// node agent's endpoint.
	NodeEndpointAnnotation = subresources.NodeEndpointAnnotation
	// NodeClientUser is the common name of the client certificate the API
	// server presents to node endpoints.
	NodeClientUser = subresources.NodeClientUser
	// StreamSubprotocol is KubeVirt's WebSocket subprotocol for console,
	// VNC and port-forward.
	StreamSubprotocol = subresources.StreamSubprotocol
	// DefaultMaxStreams and DefaultMaxStreamsPerUser are the defaults of
	// Options.MaxStreams and Options.MaxStreamsPerUser.
	DefaultMaxStreams        = subresources.DefaultMaxStreams
	DefaultMaxStreamsPerUser = subresources.DefaultMaxStreamsPerUser
)

// GuestInfo answers the guest-agent subresources of a VMI
// (subresources.GuestInfo).
type GuestInfo = subresources.GuestInfo

// newSubresources returns the handler of subresources.kubevirt.io for a
// Server with opts (defaults applied).
func newSubresources(opts Options) (*subresources.Handler, error) {
	return subresources.New(subresources.Options{
		Store: opts.Store, Authorizer: kubeAuthorizer(opts.Authorizer), GuestInfo: opts.GuestInfo, NodeTLS: opts.NodeTLS,
		MaxStreams: opts.MaxStreams, MaxStreamsPerUser: opts.MaxStreamsPerUser, MaxRequestBytes: opts.MaxRequestBytes,
		Logger: opts.Logger, Version: opts.Version,
	})
}

// isSubresourcesPath reports whether a path is subresources.kubevirt.io's.
func isSubresourcesPath(path string) bool {
	const prefix = "/apis/" + subresources.GroupName
	return strings.TrimSuffix(path, "/") == prefix || strings.HasPrefix(path, prefix+"/")
}

// serveSubresources hands a request of subresources.kubevirt.io to its
// handler, with the user in its context where a generic API server's
// authentication filter puts it.
func (s *Server) serveSubresources(w http.ResponseWriter, r *http.Request, u *User) {
	ctx := request.WithUser(r.Context(), &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups})
	s.subresources.ServeHTTP(w, r.WithContext(ctx))
}

// kubeAuthorizer asks a with the attributes of a Kubernetes authorizer:
// an error from a denies; nil is nil (every request allowed).
func kubeAuthorizer(a Authorizer) authorizer.Authorizer {
	if a == nil {
		return nil
	}
	return authorizer.AuthorizerFunc(func(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		u := &User{}
		if ui := attrs.GetUser(); ui != nil {
			u = &User{Name: ui.GetName(), UID: ui.GetUID(), Groups: ui.GetGroups()}
		}
		err := a.Authorize(ctx, Attributes{User: u, Verb: attrs.GetVerb(), Namespace: attrs.GetNamespace(), Group: attrs.GetAPIGroup(),
			Resource: attrs.GetResource(), Subresource: attrs.GetSubresource(), Name: attrs.GetName()})
		if err != nil {
			return authorizer.DecisionDeny, "", nil
		}
		return authorizer.DecisionAllow, "", nil
	})
}
