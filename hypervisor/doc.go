// Package hypervisor is the port between virtkit and whatever runs guests on
// one host: the simulated hypervisor in [github.com/virtkit/virtkit/hypervisor/sim]
// (the embedded default) or real libvirt/QEMU in
// [github.com/virtkit/virtkit/hypervisor/libvirt].
//
// The core contract is [Hypervisor]: define a domain from libvirt domain XML,
// drive its lifecycle, read its state, info and stats, and receive lifecycle
// events. Everything a host may lack is a separate small interface found by
// type assertion: [DirtyRateMeasurer], [Migrator], [AgentCommander],
// [ShutdownRequester], [ResourceHotplugger]. A backend that has the interface but cannot serve a
// call on this host returns an error matching [ErrNotSupported] that names
// the feature.
//
// The package imports the standard library only, so adapters and callers
// share value types without sharing dependencies. Measurements keep "not
// measured" apart from zero through [Measured].
//
// # Errors
//
// Every error a backend returns about a domain is a [*DomainError] that names
// the domain and the operation and wraps one of the sentinels ([ErrNotFound],
// [ErrInvalidState], ...), so callers branch with [errors.Is] and logs still
// say which guest failed.
package hypervisor
