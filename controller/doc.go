// Package controller turns intent into state: the built-in level-triggered
// reconcilers that give virtkit KubeVirt's VirtualMachine semantics. They
// run on the framework of package reconcile (its runner and shared cache),
// meet the node agents on the protocol the root package virtkit defines
// (annotations, finalizers, event and migration reasons), and the calls a
// user makes on VMs (start, stop, migrate, ...) are package actions.
//
// The names that moved to those packages are still declared here, marked
// deprecated, so code written against earlier releases keeps compiling.
//
// # Running the built-in reconcilers
//
// Each built-in reconciler is a reconcile.Reconciler fed by a
// reconcile.Controller; with ReconcilerOptions.Cache the built-in
// reconcilers also read from a reconcile.SharedCache what they do not
// modify, without copies; their own writes are put into it at once
// (reconcile.SharedCache.Assume) so the next reconcile does not act on
// the state before them. Writes always go to the store.
//
// # Deletion propagation
//
// [GarbageCollector] gives deletes Kubernetes' propagation policies through
// metadata.ownerReferences: Orphan (the owner's "orphan" finalizer; the
// dependents lose their references), Foreground (the "foregroundDeletion"
// finalizer; dependents with blockOwnerDeletion go first) and Background
// (the owner goes at once, the dependents whose owners are all gone
// after it). A VM deleted with Orphan leaves its VMI running without owner
// reference or the VM controller's finalizer; a new VM of the same name
// adopts it, as KubeVirt's does.
//
// [NamespaceReconciler] deletes a deleted namespace's content as
// Kubernetes' namespace controller does: the namespace (core v1, created
// by [EnsureNamespaces] or through the API with the "kubernetes"
// finalizer) turns Terminating, every namespaced object in it is deleted,
// then the finalizer goes and with it the namespace.
//
// Every built-in reconciler ([VMReconciler], [VMIReconciler],
// [ReplicaSetReconciler], [EvictionReconciler], [GarbageCollector],
// [NamespaceReconciler], [SnapshotReconciler], [SnapshotContentReconciler],
// [RestoreReconciler], [CloneReconciler]) can be replaced or
// complemented by the caller's own; each has a Watches method listing
// what its runner must watch.
//
// # Snapshots and restores
//
// [SnapshotReconciler] and [RestoreReconciler] implement KubeVirt's
// snapshot.kubevirt.io kinds over two small interfaces their caller
// provides: a [VolumeSnapshotter] that copies a DataVolume's data to a
// named snapshot and back (package cdi has one for file-backed volumes),
// and a [GuestFreezer] that freezes and thaws a running guest's
// filesystems through its guest agent (the node agent running the VMI
// serves it). Without a VolumeSnapshotter a VM with DataVolumes cannot be
// snapshotted (the snapshot's error says so); without a GuestFreezer online
// snapshots are taken unfrozen. [CloneReconciler] implements
// clone.kubevirt.io's VirtualMachineClone on top of them: it snapshots the
// source VM, restores the snapshot into the target and gives the target
// its own identity.
//
// # Protocol between the controllers and node agents
//
// The controllers never touch a hypervisor; node agents (package node, one
// per host) never choose placement. They meet on the VMI object:
//
// VMI phases:
//
//	""        created (by a user, the VM or the ReplicaSet controller)
//	Pending   controller: first seen; finalizer kubevirt.io/foregroundDeleteVirtualMachine
//	          added, condition Ready=False/PodNotExists
//	Scheduling controller: placement attempted and no node fits; condition
//	          PodScheduled=False/Unschedulable with the scheduler's message;
//	          retried with backoff
//	Scheduled controller: node chosen; status.nodeName, label
//	          kubevirt.io/nodeName=<node> and the node agent's finalizer
//	          set in one write, PodScheduled=True,
//	          Ready=False/GuestNotRunning. Hand-off point: from here on the
//	          node agent of that node owns the phase.
//	Running   node agent: domain started (paused counts as Running, with
//	          condition Paused=True and a reason)
//	Succeeded node agent: guest shut down voluntarily, or stopped because
//	          the VMI was deleted
//	Failed    node agent: crash, lost domain, forced destroy; controller:
//	          VMI deleted before it was placed, or placed on a node whose
//	          agent never took it (see finalizers)
//
// Finalizers on a VMI:
//
//   - kubevirt.io/foregroundDeleteVirtualMachine: added by the VMI
//     controller on first sight, removed once the VMI is final (or deleted
//     unplaced) and [virtkit.NodeAgentFinalizer] is gone.
//   - virtkit.io/node-agent ([virtkit.NodeAgentFinalizer]): added by the VMI
//     controller in the placement write (with status.nodeName and the node
//     label), or by the node agent with an Update that carries the
//     resourceVersion it read, BEFORE it defines a domain (a VMI placed by
//     another controller); never to a VMI that has a deletionTimestamp.
//     The node agent removes it after the domain is destroyed (or, for a
//     deleted VMI it never started, at once) and the final phase is
//     written; for a node whose agent went silent, the node health
//     reconciler does. A deleted VMI that is Scheduled without this
//     finalizer was never taken by an agent: the controller marks it Failed
//     and releases it; the resourceVersion checks make the race with an
//     agent taking it at the same moment safe (one of the two writes fails
//     with a conflict and re-reads).
//   - kubevirt.io/virtualMachineControllerFinalize: added by the VM
//     controller to VMIs it creates, removed once it has seen the VMI final
//     or deleted (so a crash is counted for start-failure backoff before the
//     object can vanish).
//
// Stopping: the VM controller deletes the VMI (store.Delete sets the
// deletionTimestamp because of the finalizers). The node agent presses the
// guest's ACPI power button (again every few seconds while the guest runs
// on), waits at most spec.terminationGracePeriodSeconds (default 30) for
// the guest to power off (Succeeded) and destroys it after that (Failed),
// then removes its finalizer; then the controllers remove theirs and the
// VMI disappears. A forced stop or restart shortens the VMI's
// terminationGracePeriodSeconds ([actions.StopOptions], [actions.RestartOptions]); a
// forced restart while a restart is queued only does that.
//
// Requests the node agent honours, written by the library calls [actions.Pause],
// [actions.Unpause] and [actions.SoftReboot] as VMI annotations (level-triggered; the
// spec stays immutable as in KubeVirt):
//
//   - virtkit.io/pause-request ([virtkit.PauseRequestAnnotation]): the desired
//     pause state. "true": the agent pauses the running domain (condition
//     Paused=True/PausedByUser). "false" or absent: the agent resumes a
//     domain it paused for the user; a domain paused for another reason
//     (migration monitor, I/O error) is left alone. For spec.startStrategy:
//     Paused the agent writes "true" itself before the first start, so the
//     guest stays paused until [actions.Unpause].
//   - virtkit.io/soft-reboot-request ([virtkit.SoftRebootRequestAnnotation]): a
//     request token (RFC 3339 time). The agent reboots the guest through
//     the guest agent if AgentConnected=True, else by ACPI, then removes
//     the annotation with an Update carrying the resourceVersion it read.
//
// Start paused: a Start request with data paused=true (or the VM template's
// spec.startStrategy) creates the VMI with spec.startStrategy: Paused; the
// agent starts the domain paused.
//
// Node liveness: [NodeHealthReconciler] fails the VMIs of a node whose
// agent stopped posting heartbeats (reason NodeUnresponsive) and removes
// the agent's finalizer from them.
//
// Eviction: a node is drained when it has spec.unschedulable and the taint
// kubevirt.io/drain:NoSchedule ([virtkit.DrainTaintKey]). See [EvictionReconciler]
// for what happens to each evictionStrategy. [Drain] is `kubectl drain`
// for such nodes, over any store: it cordons the node, adds the taint and
// evicts every VMI by its evictionStrategy (None shuts it down, LiveMigrate
// on a VMI that cannot migrate blocks the drain) until the node is empty;
// [Cordon] and [Uncordon] are the other node-maintenance calls. The API
// server's pods/eviction (what `kubectl drain` itself posts) marks VMIs
// with status.evacuationNodeName instead of tainting the node; the
// EvictionReconciler evacuates those too.
package controller
