package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/virtkit/virtkit/hypervisor"
)

// CPU is a simulated host's CPU: what libvirt's domain capabilities would
// say on a real host. It is a modelled capability; nothing in the
// simulation runs differently for one model or another, but placement
// (which hosts a guest may migrate to) follows it.
type CPU struct {
	// HostModel is the named model a host-model guest gets on this host.
	HostModel string
	// Vendor is the CPU vendor.
	Vendor string
	// UsableModels are the named models guests may use here; the host
	// model is usable whether listed or not.
	UsableModels []string
	// Features are the host CPU's feature flags; with the other fields they
	// make the signature that host-passthrough guests need to match.
	Features []string
}

// DefaultCPU is the CPU of a simulated host whose Options leave CPU zero:
// an Intel Skylake client, which can also run the older Intel models.
func DefaultCPU() CPU {
	return CPU{
		HostModel: "Skylake-Client-IBRS",
		Vendor:    "Intel",
		UsableModels: []string{"qemu64", "kvm64", "Nehalem", "Westmere", "SandyBridge", "IvyBridge",
			"Haswell-noTSX", "Broadwell-noTSX", "Skylake-Client-IBRS"},
		Features: []string{"ss", "vmx", "pdcm", "hypervisor", "tsc_adjust", "clflushopt", "umip", "md-clear", "stibp", "arch-capabilities", "ssbd", "xsaves", "pdpe1gb"},
	}
}

// HostCPU implements [hypervisor.HostCPUReporter]: the configured CPU,
// marked as modelled.
func (h *Host) HostCPU(ctx context.Context) (hypervisor.HostCPU, error) {
	if err := ctx.Err(); err != nil {
		return hypervisor.HostCPU{}, err
	}
	c := h.opts.CPU
	if c.HostModel == "" && c.Vendor == "" && len(c.UsableModels) == 0 && len(c.Features) == 0 {
		c = DefaultCPU()
	}
	usable := slices.Clone(c.UsableModels)
	if c.HostModel != "" && !slices.Contains(usable, c.HostModel) {
		usable = append(usable, c.HostModel)
	}
	slices.Sort(usable)
	usable = slices.Compact(usable)
	return hypervisor.HostCPU{
		HostModel: c.HostModel, Vendor: c.Vendor, UsableModels: usable,
		Signature: cpuSignature(c.Vendor, c.HostModel, c.Features), Modelled: true,
	}, nil
}

// cpuSignature is a short stable hash of a CPU's vendor, model and sorted
// features.
func cpuSignature(vendor, model string, features []string) string {
	f := slices.Clone(features)
	slices.Sort(f)
	sum := sha256.Sum256([]byte(vendor + "\x00" + model + "\x00" + strings.Join(f, ",")))
	return hex.EncodeToString(sum[:8])
}

var _ hypervisor.HostCPUReporter = (*Host)(nil)
