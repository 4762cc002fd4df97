// Package actions holds the calls a user makes on running VMs and VMIs,
// over any store.Store: the library form of virtctl's verbs and of
// KubeVirt's subresources (start, stop, restart, pause, unpause,
// soft-reboot, migrate, expand-spec's instance type lookup). The API
// server's subresources call them; so can a program embedding virtkit.
//
// An action never touches a hypervisor. It records the request on the
// objects (a state change request or run strategy on the VM, an annotation
// on the VMI, a new VirtualMachineInstanceMigration), level-triggered as
// in KubeVirt: the controllers (package controller) and node agents
// (package node) act on it. Errors wrap [ErrConflictingAction] (the VM's
// or VMI's state does not allow the action), [ErrActionForbidden] (never
// allowed for this VMI) or [ErrInvalidAction] (malformed options), which
// the API server answers with 409, 403 and 400.
package actions
