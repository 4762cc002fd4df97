//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"

	lv "libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

// MachineTypes reports the machine types libvirt's capabilities list for
// the host's architecture, with QEMU's deprecation marks.
func (h *Hypervisor) MachineTypes(ctx context.Context) ([]hypervisor.MachineType, error) {
	return call(ctx, h, func(c *lv.Connect) ([]hypervisor.MachineType, error) {
		x, err := c.GetCapabilities()
		if err != nil {
			return nil, err
		}
		var caps libvirtxml.Caps
		if err := caps.Unmarshal(x); err != nil {
			return nil, err
		}
		var out []hypervisor.MachineType
		seen := map[string]bool{}
		arch := ""
		if caps.Host.CPU != nil {
			arch = caps.Host.CPU.Arch
		}
		for _, g := range caps.Guests {
			if arch != "" && g.Arch.Name != arch {
				continue
			}
			add := func(ms []libvirtxml.CapsGuestMachine) {
				for _, m := range ms {
					if seen[m.Name] {
						continue
					}
					seen[m.Name] = true
					out = append(out, hypervisor.MachineType{Name: m.Name, Canonical: m.Canonical, Deprecated: m.Deprecated == "yes"})
				}
			}
			add(g.Arch.Machines)
			for _, d := range g.Arch.Domains {
				add(d.Machines)
			}
		}
		return out, nil
	})
}

// VCPUAffinity reports each vCPU's pinning (virDomainGetVcpuPinInfo).
func (h *Hypervisor) VCPUAffinity(ctx context.Context, name string) ([][]bool, error) {
	return withDomain(ctx, h, "vcpu affinity", name, func(_ *lv.Connect, d *lv.Domain) ([][]bool, error) {
		return d.GetVcpuPinInfo(lv.DOMAIN_AFFECT_LIVE)
	})
}

var (
	_ hypervisor.MachineTypeLister  = (*Hypervisor)(nil)
	_ hypervisor.VCPUAffinityReader = (*Hypervisor)(nil)
)
