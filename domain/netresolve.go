package domain

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

// ResolveNetworks asks resolver for the host side of every interface of
// vmi, with the same requests (MACs, ports, bindings) Build makes, without
// building a domain. It maps interface names to the attachments resolved.
// A migration target's node agent uses it to prepare its own side of the
// networks before the guest arrives.
func ResolveNetworks(ctx context.Context, vmi *virtkit.VirtualMachineInstance, resolver NetworkResolver) (map[string]HostNetwork, error) {
	if resolver == nil {
		return nil, fmt.Errorf("ResolveNetworks: %w: no network resolver", ErrNotResolved)
	}
	rec := &recordingResolver{inner: resolver, out: map[string]HostNetwork{}}
	b := &builder{ctx: ctx, vmi: vmi, opts: Options{NetworkResolver: rec}, bootOrders: map[uint]string{}}
	b.interfaces(&libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}})
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	return rec.out, nil
}

type recordingResolver struct {
	inner NetworkResolver
	out   map[string]HostNetwork
}

func (r *recordingResolver) ResolveNetwork(ctx context.Context, req NetworkRequest) (HostNetwork, error) {
	att, err := r.inner.ResolveNetwork(ctx, req)
	if err == nil {
		r.out[req.Interface] = att
	}
	return att, err
}

// RetargetInterfaces rewrites a domain XML (a migrating guest's, as the
// source sends it) so each interface named in nets attaches where the
// target resolved it: the bridge, libvirt network or tap of that node.
// Interfaces are matched by their user alias (ua-NAME); others are kept.
func RetargetInterfaces(domainXML string, nets map[string]HostNetwork) (string, error) {
	if len(nets) == 0 {
		return domainXML, nil
	}
	dom := &libvirtxml.Domain{}
	if err := dom.Unmarshal(domainXML); err != nil {
		return "", fmt.Errorf("retarget interfaces: %w", err)
	}
	if dom.Devices == nil {
		return domainXML, nil
	}
	for i := range dom.Devices.Interfaces {
		iface := &dom.Devices.Interfaces[i]
		if iface.Alias == nil || !strings.HasPrefix(iface.Alias.Name, userAliasPrefix) {
			continue
		}
		att, ok := nets[strings.TrimPrefix(iface.Alias.Name, userAliasPrefix)]
		if !ok {
			continue
		}
		switch att.Type {
		case AttachBridge:
			iface.Source = &libvirtxml.DomainInterfaceSource{Bridge: &libvirtxml.DomainInterfaceSourceBridge{Bridge: att.Source}}
		case AttachNetwork:
			iface.Source = &libvirtxml.DomainInterfaceSource{Network: &libvirtxml.DomainInterfaceSourceNetwork{Network: att.Source}}
		default:
			continue // user networking and host devices move as they are
		}
		if att.MTU > 0 {
			iface.MTU = &libvirtxml.DomainInterfaceMTU{Size: att.MTU}
		}
	}
	return dom.Marshal()
}
