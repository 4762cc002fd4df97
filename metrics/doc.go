// Package metrics exports virtkit's state to Prometheus under KubeVirt's
// metric names, types, units and labels, so dashboards and alerts written
// for KubeVirt work against a virtkit control plane unchanged.
//
// # Design
//
// Nothing in virtkit's core knows Prometheus. The hypervisor port, the
// controllers, the node agents and the migration engine expose cheap
// snapshots; the collectors here read them at scrape time through small
// interfaces declared in this package ([ObjectLister], [DomainStatser],
// [FilesystemLister], [NodeMemoryReader], [StatsProvider], [MigrationSource],
// [FinishedMigrationSource]) and metrics-owned value types
// ([ControllerStats], [GuestFilesystem]). This package imports none of the
// packages that feed it: package metrics/wire adapts node agents,
// reconcilers and the embedded cluster and registers everything in one
// call (wire.RegisterCluster, wire.ClusterHandler,
// wire.StartClusterHandler, wire.RegisterNode, wire.RegisterControlPlane).
//
// Collectors are registered into the caller's [prometheus.Registerer];
// nothing registers into the global registry and nothing happens in
// init(). [Handler] serves a Gatherer over HTTP. An [InstrumentedStore]
// wraps a store.Store and serves KubeVirt's REST client families for the
// calls made through it.
//
// For fleets of thousands of VMIs, wire.ClusterHandler (or [NewHandler] with a
// [DomainCollector] kept out of the registry) streams the per-VMI domain
// families in the text format ([DomainCollector.WriteText]): each VMI's
// escaped label set is cached by UID and resourceVersion and its samples
// are appended as text, without client_golang's per-series metric, label
// pairs, sort and encoding, which cost most of a gathered scrape. With
// ControlPlaneSources.StreamVMIFamilies the control plane's per-VMI
// object families are streamed too ([ControlPlaneCollector.WriteText]),
// from lines rendered once per VMI resourceVersion. A [VMIIndex], fed by
// one read-only watch, gives both collectors the VMIs in key order
// without a copy per scrape (wire.StartClusterHandler wires all three).
//
// Two collectors mirror KubeVirt's two exporters:
//
//   - [DomainCollector] is virt-handler's side: per-VMI domain statistics
//     (kubevirt_vmi_cpu_*, _vcpu_*, _memory_*, _network_*, _storage_*,
//     _filesystem_*, _dirty_rate_*, _node_cpu_affinity), the node's
//     deprecated machine types and emulation, the host's memory
//     (virtkit_node_memory_*, when the node's DomainStatser is also a
//     [NodeMemoryReader]), and for migrations the job's
//     counters (kubevirt_vmi_migration_data_*) and the engine's view
//     (virtkit_migration_*).
//   - [ControlPlaneCollector] is virt-controller's and virt-api's side:
//     kubevirt_info, component readiness, kubevirt_vmi_info and the other
//     per-VMI object families, phase-transition histograms, migration
//     start/end/outcome and phase counts, kubevirt_vm_*, work-queue and
//     reconcile metrics.
//
// # Scrape deadline
//
// A scrape never waits longer than Options.ScrapeTimeout for domain or
// migration-job statistics. They are fetched concurrently (at most
// Options.MaxConcurrency at a time) under a context with that deadline; a
// domain that misses it is left out of the scrape and counted in
// virtkit_scrape_domain_timeouts_total, so one stuck QEMU cannot stall the
// scrape of a whole node.
//
// # Not measured is absent
//
// A value the backend did not measure (an invalid hypervisor.Measured, an
// unset status pointer, a guest agent that is not connected, a migration
// job not polled yet) produces no series at all, never a zero.
//
// # Untrusted strings
//
// Label values copied from guests (filesystem names, OS info) may hold
// any bytes; invalid UTF-8 is replaced so a hostile guest cannot make the
// registry reject the whole scrape.
//
// # Differences from KubeVirt
//
// docs/metrics.md lists every KubeVirt family, whether virtkit serves it
// and why not. In short:
//
//   - VMI labels become kubernetes_vmi_label_<key> with every character
//     outside [a-zA-Z0-9_] replaced by "_" and case kept, as KubeVirt does
//     (kubevirt.io/nodeName -> kubernetes_vmi_label_kubevirt_io_nodeName);
//     keys that collide after that keep the first (in key order).
//   - The interface and drive labels are the VMI's interface and disk
//     names, read once per VMI from the "ua-<name>" aliases of the live
//     domain XML when the node's DomainStatser also implements
//     [DomainXMLer]; otherwise the host-side device name and disk target.
//     vCPU pinning (kubevirt_vmi_node_cpu_affinity) and the domain type
//     (kubevirt_configuration_emulation_enabled) are read with them.
//   - The REST client families describe the calls to the object store
//     (virtkit's API server), through an [InstrumentedStore]; the store
//     client has no rate limiter, so its histogram records zero waits.
//   - kubevirt_virt_handler_ready_status carries a node label: one
//     endpoint may serve several node agents.
//   - vmi_pod in kubevirt_vmi_info is the domain name: there is no
//     launcher pod. kubevirt_vmi_launcher_memory_overhead_bytes is
//     status.memory.memoryOverhead, else an estimate of what the
//     hypervisor process needs beyond guest memory: 180 MiB, 8 MiB per
//     vCPU, 16 MiB of video memory unless autoattachGraphicsDevice is
//     false, and 1/512 of guest memory for page tables.
//   - A finished migration keeps its final job counters
//     (kubevirt_vmi_migration_data_*, transfer and dirty rates) and the
//     engine's virtkit_migration_* series while its
//     VirtualMachineInstanceMigration exists, and its start and end times
//     from the VMIM's status once the VMI no longer records it. KubeVirt
//     drops the job counters when the job ends.
//   - A guest filesystem whose size the agent did not report (0) gives no
//     kubevirt_vmi_filesystem_* series.
//   - Phase-transition histograms are accumulated by the collector from
//     the phaseTransitionTimestamps it sees, at each scrape and, after
//     [ControlPlaneCollector.Start], at each watch event; they start empty
//     when the process starts.
//   - Not served: virt-operator's families (no operator), the console,
//     VNC, port-forward and USB-redirection connection families (no such
//     proxies), kubevirt_vmi_gpu_info (GPUs not collected), the guest load,
//     device-driver and panic families (no source) and
//     kubevirt_vmi_sync_total (no per-VMI sync counts).
//   - kubevirt_vmsnapshot_persistentvolumeclaim_labels and
//     kubevirt_vmsnapshot_disks_restored_from_source{,_bytes} are
//     Prometheus recording rules over kube-state-metrics in KubeVirt; with
//     no kube-state-metrics, the control plane serves their results
//     itself, from the DataVolumes a restore labelled
//     restore.kubevirt.io/source-vm-name and -namespace (a DataVolume
//     stands for its claim; bytes are its storage request).
//
// # Imports
//
// This package reads interfaces and imports only the root package,
// hypervisor, migration and store; the adapters that connect it to
// controllers, node agents and the embedded cluster live in metrics/wire.
package metrics
