// Package metrics exports virtkit's state to Prometheus under KubeVirt's
// metric names, types, units and labels, so dashboards and alerts written
// for KubeVirt work against a virtkit control plane unchanged.
//
// # Design
//
// Nothing in virtkit's core knows Prometheus. The hypervisor port, the
// controllers, the node agents and the migration engine expose cheap
// snapshots (hypervisor.Hypervisor.Stats, controller.Controller.Stats,
// node.Agent.FilesystemList, migration.Engine.Snapshot, object status);
// the collectors here read them at scrape time and turn them into const
// metrics. Sources are small interfaces declared in this package
// ([ObjectLister], [DomainStatser], [FilesystemLister], [StatsProvider],
// [MigrationSource]), so a caller can feed any part from its own code.
//
// Collectors are registered into the caller's [prometheus.Registerer];
// nothing registers into the global registry and nothing happens in
// init(). [RegisterCluster] wires an embedded [cluster.Cluster] in one call
// (node agents' migration snapshots through [AgentMigrations]);
// [RegisterNode] and [RegisterControlPlane] wire the per-process endpoints
// of a control plane spread over hosts; [Handler] serves a Gatherer over
// HTTP.
//
//	reg := prometheus.NewRegistry()
//	if err := metrics.RegisterCluster(reg, c, metrics.Options{}); err != nil {
//		return err
//	}
//	http.Handle("/metrics", metrics.Handler(reg))
//
// For fleets of thousands of VMIs, [ClusterHandler] (or [NewHandler] with a
// [DomainCollector] kept out of the registry) streams the per-VMI domain
// families in the text format ([DomainCollector.WriteText]): each VMI's
// escaped label set is cached by UID and resourceVersion and its samples
// are appended as text, without client_golang's per-series metric, label
// pairs, sort and encoding, which cost most of a gathered scrape.
//
// Two collectors mirror KubeVirt's two exporters:
//
//   - [DomainCollector] is virt-handler's side: per-VMI domain statistics
//     (kubevirt_vmi_cpu_*, _vcpu_*, _memory_*, _network_*, _storage_*,
//     _filesystem_*, _dirty_rate_*) and, while a migration runs, the job's
//     counters (kubevirt_vmi_migration_data_*) and the engine's view
//     (virtkit_migration_*).
//   - [ControlPlaneCollector] is virt-controller's side: kubevirt_vmi_info,
//     phase-transition histograms, migration start/end/outcome and phase
//     counts, kubevirt_vm_*, work-queue and reconcile metrics.
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
//   - VMI labels become kubernetes_vmi_label_<key> with every character
//     outside [a-zA-Z0-9_] replaced by "_" and camelCase turned into
//     snake_case (kubevirt.io/nodeName -> kubernetes_vmi_label_kubevirt_io_node_name),
//     so the exposition passes promtool's lint; keys that collide after
//     that keep the first (in key order).
//   - The interface and drive labels are the VMI's interface and disk
//     names, read once per VMI from the "ua-<name>" aliases of the live
//     domain XML when the node's DomainStatser also implements
//     [DomainXMLer]; otherwise, and for devices without such an alias,
//     the host-side device name and disk target (vnet0, vda).
//   - kubevirt_vmi_guest_load_*, kubevirt_vmi_node_cpu_affinity,
//     kubevirt_vmi_vnic_info and kubevirt_vmi_launcher_memory_overhead_bytes
//     are not exported: no source reports them yet.
//   - A guest filesystem whose size the agent did not report (0) gives no
//     kubevirt_vmi_filesystem_* series.
//   - kubevirt_vm_*_status_last_transition_timestamp_seconds are gauges
//     (KubeVirt declares counters without the _total suffix, which
//     promtool rejects), and only the VM's current status group is
//     exported, at the time of its newest condition change: virtkit does
//     not record when a VM left the other groups.
//   - Phase-transition histograms are accumulated by the collector from
//     the phaseTransitionTimestamps it sees at each scrape, so they start
//     empty when the process starts and miss objects created and deleted
//     between two scrapes.
//
// # Imports
//
// The project's layering lets metrics import root, hypervisor and migration; this
// package also imports store, controller, node and cluster, because the
// sources it reads (store listings, controller statistics, node agents'
// guest information, the embedded cluster) live there. None of them
// import metrics.
package metrics
