// Package hypervisortest is the conformance suite every
// [github.com/virtkit/virtkit/hypervisor.Hypervisor] backend runs: the
// simulated hypervisor, libvirt's in-process test driver and a real libvirtd
// with QEMU. One suite keeps the backends interchangeable: a control plane
// tested on the simulator behaves the same on real hosts.
//
// A backend's test calls [Run] with a function that builds a fresh [Target]
// for each subtest. The core contract (define, lifecycle with libvirt's
// state reasons, info, stats, events, sentinel errors, context handling) is
// always checked. Optional capabilities are found by type assertion, as
// callers find them, and their subtests skip by name when the backend lacks
// the interface or answers with an error matching
// [github.com/virtkit/virtkit/hypervisor.ErrNotSupported]: the skip message
// says which capability was missing, so a gap is visible, never silent.
//
// Waiting is bounded by the Target's timeouts and polls real time; a backend
// on a virtual clock advances that clock in the background for the suite.
package hypervisortest
