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
// and [Handler] serves a Gatherer over HTTP.
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
// unset status pointer, a guest agent that is not connected) produces no
// series at all, never a zero.
//
// # Differences from KubeVirt
//
//   - VMI labels become kubernetes_vmi_label_<key> with every character
//     outside [a-zA-Z0-9_] replaced by "_" and camelCase turned into
//     snake_case (kubevirt.io/nodeName -> kubernetes_vmi_label_kubevirt_io_node_name),
//     so the exposition passes promtool's lint; keys that collide after
//     that keep the first (in key order).
//   - The interface and drive labels are the host-side device name and
//     the disk target (vnet0, vda) as the hypervisor reports them.
//   - kubevirt_vm_*_status_last_transition_timestamp_seconds are gauges
//     (KubeVirt declares counters without the _total suffix, which
//     promtool rejects).
//   - Phase-transition histograms are accumulated by the collector from
//     the phaseTransitionTimestamps it sees at each scrape, so they start
//     empty when the process starts and miss objects created and deleted
//     between two scrapes.
//
// # Imports
//
// DESIGN.md lets metrics import root, hypervisor and migration; this
// package also imports store, controller, node and cluster, because the
// sources it reads (store listings, controller statistics, node agents'
// guest information, the embedded cluster) live there. None of them
// import metrics.
package metrics
