package cluster

import (
	"fmt"
)

// NewControlPlane builds the control plane alone, what `virtkit controller`
// runs against a shared store: the store's setup (namespaces, the KubeVirt
// object, common instance types), the built-in and extra controllers,
// their event recorder and the collector of expired events, and no host.
// The node agents run elsewhere ([NewNodeProcess]) on the same store.
// Options that make hosts (Nodes, NodeNames, NewHypervisor, NodeLabels,
// ConfigureNode, PodNetwork) are refused; those that tune them (NodeAgent,
// GuestAgent, Domain) are unused. The zero value is a control plane on a memory store.
// [Cluster.Start] runs it; [Cluster.Nodes] is empty.
func NewControlPlane(opts Options) (*Cluster, error) {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"Nodes", opts.Nodes != 0}, {"NodeNames", len(opts.NodeNames) > 0}, {"NewHypervisor", opts.NewHypervisor != nil},
		{"NodeLabels", opts.NodeLabels != nil}, {"ConfigureNode", opts.ConfigureNode != nil}, {"PodNetwork", opts.PodNetwork != nil},
	} {
		if f.set {
			return nil, fmt.Errorf("%w: %s: a control plane runs no hosts (see NewNodeProcess)", errInvalidOptions, f.name)
		}
	}
	return build(opts, false)
}
