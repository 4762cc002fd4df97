package hypervisor

import "context"

// NodeMemory is the host's memory as the hypervisor reports it, in bytes.
// On libvirt these are virNodeGetMemoryStats' fields for all NUMA cells
// (the host's /proc/meminfo MemTotal, MemFree, Buffers and Cached); a field
// the backend did not report is not measured.
type NodeMemory struct {
	Total   Measured[uint64]
	Free    Measured[uint64]
	Buffers Measured[uint64]
	Cached  Measured[uint64]
	// Available is the kernel's estimate of memory available to new
	// processes (MemAvailable), when the backend reports it.
	Available Measured[uint64]
	// Modelled is true when the figures come from a simulation's model of
	// the host rather than from the kernel.
	Modelled bool
}

// NodeMemoryReporter is implemented by a [Hypervisor] that can report its
// host's memory. A backend that cannot returns an error matching
// [ErrNotSupported].
type NodeMemoryReporter interface {
	NodeMemory(ctx context.Context) (NodeMemory, error)
}
