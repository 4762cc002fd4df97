package hypervisor

import "context"

// MachineType is one machine type the host's emulator offers for the
// host's architecture (libvirt's capabilities <guest><arch><machine>).
type MachineType struct {
	Name string
	// Canonical is the versioned type an alias (pc, q35) stands for.
	Canonical string
	// Deprecated is true when the emulator marks the type as deprecated
	// (to be removed in a later version).
	Deprecated bool
}

// MachineTypeLister is implemented by a [Hypervisor] that reports the
// machine types its emulator offers.
type MachineTypeLister interface {
	MachineTypes(ctx context.Context) ([]MachineType, error)
}

// VCPUAffinityReader is implemented by a [Hypervisor] that reports which
// host CPUs each vCPU of a running domain may run on (libvirt's vCPU pin
// information): result[v][c] is true when vCPU v may run on host CPU c.
type VCPUAffinityReader interface {
	VCPUAffinity(ctx context.Context, domain string) ([][]bool, error)
}
