package scheduler

import (
	"context"
	"fmt"
	"sort"

	"github.com/virtkit/virtkit"
)

// NameNodeDevices is the name of the [NodeDevices] plugin.
const NameNodeDevices = "NodeDevices"

// DeviceRequests returns the host device resources vmi asks for: one of
// each gpus[].deviceName and hostDevices[].deviceName, counted by
// resource name (nil when it asks for none). Devices given by a resource
// claim are not node resources and are not counted.
func DeviceRequests(vmi *virtkit.VirtualMachineInstance) map[virtkit.ResourceName]int64 {
	dev := &vmi.Spec.Domain.Devices
	if len(dev.GPUs) == 0 && len(dev.HostDevices) == 0 {
		return nil
	}
	out := map[virtkit.ResourceName]int64{}
	for _, g := range dev.GPUs {
		if g.DeviceName != "" && g.ClaimName == nil {
			out[virtkit.ResourceName(g.DeviceName)]++
		}
	}
	for _, h := range dev.HostDevices {
		if h.DeviceName != "" && h.ClaimName == nil {
			out[virtkit.ResourceName(h.DeviceName)]++
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// addDevices adds (sign 1) or removes (sign -1) a VMI's device requests
// to a node's sums; p.mu must be held.
func (p *Placements) addDevices(node string, dev map[virtkit.ResourceName]int64, sign int64) {
	if len(dev) == 0 {
		return
	}
	if p.devices == nil {
		p.devices = map[string]map[virtkit.ResourceName]int64{}
	}
	u := p.devices[node]
	if u == nil {
		u = map[virtkit.ResourceName]int64{}
		p.devices[node] = u
	}
	for r, n := range dev {
		u[r] += sign * n
		if u[r] <= 0 {
			delete(u, r)
		}
	}
	if len(u) == 0 {
		delete(p.devices, node)
	}
}

// NodeDevices filters out nodes that do not have free the host devices a
// VMI's GPUs and host devices name: a node offers a device resource in
// its status.allocatable (else status.capacity), as KubeVirt's device
// plugins advertise permitted host devices, and the VMIs already holding
// the node use some of them. A failing node's reason is kube-scheduler's
// "Insufficient <resource>".
type NodeDevices struct{}

// Name implements Plugin.
func (NodeDevices) Name() string { return NameNodeDevices }

// Filter implements FilterPlugin.
func (NodeDevices) Filter(_ context.Context, _ *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) *Status {
	want := DeviceRequests(vmi)
	if len(want) == 0 {
		return nil
	}
	alloc := n.Node.Status.Allocatable
	if len(alloc) == 0 {
		alloc = n.Node.Status.Capacity
	}
	var short []string
	for r, k := range want {
		have := quantity(alloc, r, false)
		if n.RequestedDevices[r]+k > have {
			short = append(short, fmt.Sprintf(reasonInsufficientFmt, r))
		}
	}
	if len(short) == 0 {
		return nil
	}
	sort.Strings(short)
	return NewStatus(Unschedulable, short...)
}
