// Package cluster assembles a whole virtkit control plane in one process:
// a store, the built-in controllers and one node agent per host. It is what
// `virtkit demo`, the examples and test harnesses use, and the shortest
// path from "import virtkit" to running guests:
//
//	c, err := cluster.New(cluster.Options{Nodes: 2}) // memory store, sim hosts
//	go c.Start(ctx)
//	err = c.Apply(ctx, objs...)
//	vmi, err := c.WaitForVMI(ctx, "default", "testvmi", cluster.VMIPhaseIs(virtkit.Running))
//
// Every part is replaceable through Options: the store (etcd for a control
// plane spanning hosts), the hypervisor of each node (real libvirt), the
// scheduler, and any reconciler. The package adds nothing the parts do not
// already do; it wires them and waits. docs/extending.md in the repository
// shows how to write each replacement.
//
// New installs KubeVirt's common instance types and preferences
// (virtkit.CommonInstancetypes: u1.small, fedora, ...) in the store, as
// KubeVirt's operator deploys them, unless Options.NoCommonInstancetypes.
//
// The controllers of a cluster share one reconcile.SharedCache: one
// store watch per kind for all of them, and the reads they do not modify
// served from its indexes. Node agents keep their own watches.
//
// The same code assembles a control plane spread over processes: what
// `virtkit controller` and `virtkit node` run, which only parse their flags
// into these options. [NewControlPlane] builds the control plane without
// hosts (the store's setup, the controllers, their events), for a shared
// store whose hosts run elsewhere. [NewNodeProcess] builds one host run on
// its own: its node agent (through [NewNode], which New uses for each of
// its hosts: store-backed events, guest-agent source), the retries of its
// event writes, its DataVolume import worker, its pod network, a
// simulated host's listener for migrations from other processes, and its
// endpoint for the API server; [NodeProcess.Run] runs them and marks the
// Node stopped when it ends. [StartAPIServer] serves a store as the
// Kubernetes API (kubectl, virtctl, client-go), with the endpoints of this
// process's node agents and CDI's upload proxy beside it, as `virtkit
// controller --api-addr` does; [Cluster.GuestInfo] answers its guest-agent
// subresources from the cluster's agents. An embedded cluster and a
// multi-process one differ only in their store and transports. [Cluster.Cordon],
// [Cluster.Uncordon] and [Cluster.Drain] are node maintenance on the
// cluster's clock, with its event recorder and default eviction strategy.
//
// [CheckNoDoubleRun], [CheckNoPausedByEndedMigration] and
// [CheckNoLeakedDomains] check lifecycle invariants across every host's
// hypervisor and the store; tests call them after [Cluster.Settle]. Their
// In variants ([CheckNoDoubleRunIn] and the others) read an [Observation]
// instead: a store and the hosts' domains, such as node agents in other
// processes report them.
//
// The built-in controllers include a garbage collector, so deletes with
// store.DeleteOptions.PropagationPolicy orphan or delete the dependents as
// in Kubernetes; [CheckOwnersAndFinalizers] checks, once the cluster is
// quiescent, that no owner reference dangles and no deletion is stuck.
// The cluster starts with the namespaces kube-apiserver creates (default,
// kube-system, kube-public), and its namespace controller deletes the
// content of a deleted namespace before the namespace goes; objects of a
// namespace that was never created are left alone (Apply does not check).
//
// On a virtual clock (Options.Clock, [Cluster.Settle], [Cluster.Advance])
// with Options.Seed set, a scenario repeats: uids, generated names,
// firmware UUIDs and every jitter are drawn from streams of the seed, one
// per component. [Cluster.CrashAgent] and [Cluster.RestartAgent] stop and
// start one node's agent, for fault injection (package test/simulation).
package cluster
