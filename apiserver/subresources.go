package apiserver

import "github.com/virtkit/virtkit/apiserver/subresources"

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
	// GenericOptions.MaxStreams and GenericOptions.MaxStreamsPerUser.
	DefaultMaxStreams        = subresources.DefaultMaxStreams
	DefaultMaxStreamsPerUser = subresources.DefaultMaxStreamsPerUser
)

// GuestInfo answers the guest-agent subresources of a VMI
// (subresources.GuestInfo).
type GuestInfo = subresources.GuestInfo
