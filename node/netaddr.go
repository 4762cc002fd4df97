package node

import (
	"context"

	"github.com/virtkit/virtkit"
)

// InterfaceAddresser is implemented by network resolvers that lease the
// addresses of a VMI's interfaces (network.Resolver). The node agent
// reports those addresses in status.interfaces where the guest cannot:
// a masquerade guest sees only its private 10.0.2.2, while the VMI's
// address is the one the node forwards to it (KubeVirt reports that one),
// and an interface the guest agent has not reported yet shows its lease.
type InterfaceAddresser interface {
	// InterfaceAddresses maps interface names to their addresses.
	InterfaceAddresses(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (map[string][]string, error)
}

// applyLeasedAddresses puts the resolver's addresses into the VMI's
// status.interfaces (see InterfaceAddresser); without such a resolver it
// does nothing.
func (a *Agent) applyLeasedAddresses(ctx context.Context, vmi *virtkit.VirtualMachineInstance) {
	r, ok := a.opts.Domain.NetworkResolver.(InterfaceAddresser)
	if !ok || len(vmi.Status.Interfaces) == 0 {
		return
	}
	addrs, err := r.InterfaceAddresses(ctx, vmi)
	if err != nil {
		a.log.Debug("interface addresses", "vmi", vmi.Namespace+"/"+vmi.Name, "err", err)
		return
	}
	masquerade := map[string]bool{}
	for _, i := range vmi.Spec.Domain.Devices.Interfaces {
		if i.Masquerade != nil {
			masquerade[i.Name] = true
		}
	}
	for i := range vmi.Status.Interfaces {
		st := &vmi.Status.Interfaces[i]
		got := addrs[st.Name]
		if len(got) == 0 || !masquerade[st.Name] && len(st.IPs) > 0 {
			continue
		}
		st.IPs = append([]string(nil), got...)
		st.IP = primaryIP(st.IPs)
	}
}
