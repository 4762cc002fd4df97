package cluster

import (
	"sync"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
)

// ObjectDefaults are the object defaults the cluster applies: o.Defaults
// with the cluster's own default for the pod network's interface binding.
//
// KubeVirt defaults the pod network's interface to bridge unless the
// cluster configuration (network.defaultNetworkInterface) says masquerade.
// A bridge on the pod network cannot live-migrate, so a Cluster models a
// cluster configured with masquerade: when Defaults.PodNetworkBinding is
// empty it is virtkit.NetworkBindingMasquerade, and a VM built in Go with
// no interfaces migrates. Set virtkit.NetworkBindingBridge for KubeVirt's
// stock behaviour. The package-level virtkit.SetDefaults (and [Apply] on a
// bare store) keeps KubeVirt's stock bridge.
func (o Options) ObjectDefaults() virtkit.DefaultOptions {
	d := o.Defaults
	if d.PodNetworkBinding == "" {
		d.PodNetworkBinding = virtkit.NetworkBindingMasquerade
	}
	return d
}

// defaultSimHosts returns the hypervisor factory of the zero-value
// cluster: simulated hosts in real time on one mesh sim.Network, so every
// host can migrate to every other.
func defaultSimHosts(clk sim.Clock, agent sim.AgentOptions) func(name string) (hypervisor.Hypervisor, error) {
	var (
		once sync.Once
		net  *sim.Network
		err  error
	)
	return func(name string) (hypervisor.Hypervisor, error) {
		once.Do(func() { net, err = sim.NewMeshNetwork(sim.Link{}) })
		if err != nil {
			return nil, err
		}
		h := sim.New(sim.Options{Name: name, Clock: clk, Agent: agent})
		if err := net.Join(h); err != nil {
			return nil, err
		}
		return h, nil
	}
}
