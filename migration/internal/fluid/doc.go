// Package fluid is a small fluid model of one QEMU pre-copy/post-copy
// migration on a manual clock. It implements the
// hypervisor's migration interfaces so the engine's tests can drive a job
// whose physics are known exactly. It is not the simulated hypervisor: it
// has one guest, no domains and no events.
package fluid
