package cluster

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// GuestInfo answers the API's guest-agent subresources (guestosinfo,
// userlist, filesystemlist) from the node agents of this cluster: the
// VMI's status.nodeName names the agent. A VMI on a node of another
// process is answered with node.ErrNoGuestInfo.
func (c *Cluster) GuestInfo() apiserver.GuestInfo { return clusterGuestInfo{c} }

type clusterGuestInfo struct{ c *Cluster }

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
