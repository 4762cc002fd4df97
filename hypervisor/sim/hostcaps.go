package sim

import (
	"context"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// machineTypes are the x86_64 machine types of QEMU 7.2 (Debian 12) that
// virtkit's domains use or that QEMU marks deprecated, as libvirt reports
// them; the default libvirt face models that emulator.
var machineTypes = []hypervisor.MachineType{
	{Name: "pc", Canonical: "pc-i440fx-7.2"},
	{Name: "pc-i440fx-7.2"},
	{Name: "q35", Canonical: "pc-q35-7.2"},
	{Name: "pc-q35-7.2"},
	{Name: "pc-q35-7.1"},
	{Name: "pc-q35-7.0"},
	{Name: "pc-i440fx-1.7", Deprecated: true},
	{Name: "pc-i440fx-1.6", Deprecated: true},
	{Name: "pc-i440fx-1.5", Deprecated: true},
	{Name: "pc-i440fx-1.4", Deprecated: true},
}

// MachineTypes reports the machine types of the emulator the host models.
func (h *Host) MachineTypes(ctx context.Context) ([]hypervisor.MachineType, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return append([]hypervisor.MachineType(nil), machineTypes...), nil
}

// VCPUAffinity reports every vCPU of an active domain as free to run on
// every host CPU: the model does not pin vCPUs.
func (h *Host) VCPUAffinity(ctx context.Context, name string) ([][]bool, error) {
	var out [][]bool
	err := h.do(ctx, func(time.Time) error {
		d, err := h.lookup("vcpu affinity", name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return hypervisor.WrapDomain("vcpu affinity", name, hypervisor.ErrInvalidState)
		}
		out = make([][]bool, d.spec().vcpus)
		for v := range out {
			out[v] = make([]bool, h.opts.CPUs)
			for c := range out[v] {
				out[v][c] = true
			}
		}
		return nil
	})
	return out, err
}

var (
	_ hypervisor.MachineTypeLister  = (*Host)(nil)
	_ hypervisor.VCPUAffinityReader = (*Host)(nil)
)
