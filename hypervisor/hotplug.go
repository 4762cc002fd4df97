package hypervisor

import "context"

// PluggableMemory is the state of a running domain's virtio-mem device:
// memory the guest can be given and taken without a restart, in blocks,
// on top of the memory it booted with.
type PluggableMemory struct {
	// SizeBytes is the most the device can plug (the domain's maximum
	// memory less its boot memory).
	SizeBytes uint64
	// BlockBytes is the device's block size; requests are multiples of it.
	BlockBytes uint64
	// RequestedBytes is what the host asked the guest to plug.
	RequestedBytes uint64
	// CurrentBytes is what the guest has plugged: it follows RequestedBytes
	// only when the guest's virtio-mem driver does the work, so a guest
	// without one stays at 0.
	CurrentBytes uint64
}

// ResourceHotplugger is implemented by a [Hypervisor] that can change a
// running domain's vCPUs and memory (libvirt: virDomainSetVcpusFlags and
// the requested size of a virtio-mem device through
// virDomainUpdateDeviceFlags). A domain can gain vCPUs only up to the
// maximum its definition leaves room for (<vcpu current='N'>MAX</vcpu>),
// and memory only through a virtio-mem device it was defined with.
type ResourceHotplugger interface {
	// SetVCPUs plugs or unplugs vCPUs until count are present, in the
	// running domain and in its persistent definition.
	SetVCPUs(ctx context.Context, name string, count int) error
	// PluggableMemory reads the domain's virtio-mem device. A domain
	// without one gets an error matching [ErrNotSupported].
	PluggableMemory(ctx context.Context, name string) (PluggableMemory, error)
	// RequestPluggableMemory sets the virtio-mem device's requested size
	// (a multiple of its block size, at most its size).
	RequestPluggableMemory(ctx context.Context, name string, bytes uint64) error
}
