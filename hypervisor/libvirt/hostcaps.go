//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"

	lv "libvirt.org/go/libvirt"

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
		return machineTypesFromCaps(x)
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
