package hypervisor

import "context"

// LaunchSecurity is what a host's platform offers confidential guests,
// from its hypervisor's domain capabilities.
type LaunchSecurity struct {
	// SEV: AMD Secure Encrypted Virtualization; SEVES: its encrypted
	// state (SEV-ES); SNP: SEV Secure Nested Paging; TDX: Intel Trust
	// Domain Extensions.
	SEV, SEVES, SNP, TDX bool
	// CBitPos and ReducedPhysBits are the platform's C-bit position and
	// physical address bit reduction (0: not reported).
	CBitPos, ReducedPhysBits uint
}

// LaunchSecurityReporter is implemented by a [Hypervisor] that reports
// what its host offers confidential guests. An error matching
// [ErrNotSupported] says the hypervisor cannot tell.
type LaunchSecurityReporter interface {
	LaunchSecurity(ctx context.Context) (LaunchSecurity, error)
}
