package hypervisor

import "context"

// HostCPU describes the host's CPU as migration placement needs it: which
// named CPU model a host-model guest gets here, which named models a guest
// may use here, and an identity of the exact host CPU for host-passthrough
// guests (which only move between identical CPUs).
type HostCPU struct {
	// HostModel is the named model libvirt expands cpu mode host-model to on
	// this host ("EPYC", "Skylake-Client-IBRS"); empty when unknown.
	HostModel string
	// Vendor is the CPU vendor ("Intel", "AMD"); empty when unknown.
	Vendor string
	// UsableModels are the named models a guest can run with on this host
	// (libvirt's domain capabilities, custom mode, usable='yes').
	UsableModels []string
	// Signature identifies the exact host CPU (model, vendor and feature
	// set): two hosts with the same signature run host-passthrough guests
	// alike. Empty when unknown.
	Signature string
	// Modelled is true when the description is a simulation's configured
	// capability rather than something read from real hardware.
	Modelled bool
}

// HostCPUReporter is implemented by a [Hypervisor] that can describe its
// host's CPU. A backend that cannot (libvirt's test driver has no domain
// capabilities) returns an error matching [ErrNotSupported].
type HostCPUReporter interface {
	HostCPU(ctx context.Context) (HostCPU, error)
}
