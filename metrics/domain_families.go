package metrics

import "github.com/prometheus/client_golang/prometheus"

const (
	counter = prometheus.CounterValue
	gauge   = prometheus.GaugeValue
)

// vmiBase are the labels of every per-VMI domain metric, before any extra
// label and the VMI's own labels.
var vmiBase = []string{"node", "namespace", "name"}

func vmiFamily(name, help string, typ prometheus.ValueType, extra ...string) *family {
	return newFamily(name, help, typ, append(append([]string(nil), vmiBase...), extra...)...)
}

// domainFamilies are the virt-handler metrics.
type domainFamilies struct {
	cpuUsage, cpuUser, cpuSystem *family

	vcpuSeconds, vcpuWait, vcpuDelay *family

	memResident, memAvailable, memUnused, memCached, memSwapIn, memSwapOut *family
	memMajFault, memMinFault, memBalloon, memUsable, memDomain             *family

	netRxBytes, netTxBytes, netRxPackets, netTxPackets   *family
	netRxErrors, netTxErrors, netRxDropped, netTxDropped *family
	netTraffic                                           *family

	stIopsRead, stIopsWrite, stReadBytes, stWriteBytes   *family
	stReadTimes, stWriteTimes, stFlushReqs, stFlushTimes *family

	fsCapacity, fsUsed *family

	dirtyRate *family

	migDataTotal, migDataRemaining, migDataProcessed, migDirtyRate, migTransferRate *family
	// migPostCopyFaults is virtkit's: KubeVirt serves no post-copy family.
	migPostCopyFaults *family

	engine engineFamilies

	timeouts, errors *family

	cpuAffinity, deprecatedMachines, emulation *family

	nodeMem nodeMemoryFamilies
}

// engineFamilies are virtkit's own migration metrics. The domain collector
// fills them from live engine snapshots, the control-plane collector from
// status.migrationState.virtkitEngine.
type engineFamilies struct {
	predictedTotal, predictedDowntime, strategy, throttle *family
	dirtyRate, bandwidth, downtimeLimit, decisions        *family
}

func newEngineFamilies() engineFamilies {
	l := []string{"node", "namespace", "name"}
	return engineFamilies{
		predictedTotal: newFamily("virtkit_migration_predicted_total_seconds",
			"Migration time the virtkit engine predicts, counted from the start of the job.", gauge, l...),
		predictedDowntime: newFamily("virtkit_migration_predicted_downtime_seconds",
			"Final pause the virtkit engine predicts for the switchover.", gauge, l...),
		strategy: newFamily("virtkit_migration_strategy_info",
			"Strategy the virtkit engine chose (value 1).", gauge, append(l, "strategy")...),
		throttle: newFamily("virtkit_migration_throttle_ratio",
			"Current guest vCPU throttle set by the virtkit engine (0-1).", gauge, l...),
		dirtyRate: newFamily("virtkit_migration_measured_dirty_rate_bytes_per_second",
			"Guest dirty rate the virtkit engine measured.", gauge, l...),
		bandwidth: newFamily("virtkit_migration_measured_bandwidth_bytes_per_second",
			"Migration bandwidth the virtkit engine measured.", gauge, l...),
		downtimeLimit: newFamily("virtkit_migration_downtime_limit_seconds",
			"Downtime limit of the switchover as the virtkit engine set it.", gauge, l...),
		decisions: newFamily("virtkit_migration_decisions_total",
			"Decisions the virtkit engine took, by action.", counter, append(l, "action")...),
	}
}

func newDomainFamilies() *domainFamilies {
	return &domainFamilies{
		cpuUsage:  vmiFamily("kubevirt_vmi_cpu_usage_seconds_total", "Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).", counter),
		cpuUser:   vmiFamily("kubevirt_vmi_cpu_user_usage_seconds_total", "Total CPU time spent in user mode.", counter),
		cpuSystem: vmiFamily("kubevirt_vmi_cpu_system_usage_seconds_total", "Total CPU time spent in system mode.", counter),

		vcpuSeconds: vmiFamily("kubevirt_vmi_vcpu_seconds_total", "Total amount of time spent in each state by each vcpu (cpu_time excluding hypervisor time).", counter, "id", "state"),
		vcpuWait:    vmiFamily("kubevirt_vmi_vcpu_wait_seconds_total", "Amount of time spent by each vcpu while waiting on I/O.", counter, "id"),
		vcpuDelay:   vmiFamily("kubevirt_vmi_vcpu_delay_seconds_total", "Amount of time spent by each vcpu waiting in the queue instead of running.", counter, "id"),

		memResident:  vmiFamily("kubevirt_vmi_memory_resident_bytes", "Resident set size of the process running the domain.", gauge),
		memAvailable: vmiFamily("kubevirt_vmi_memory_available_bytes", "Amount of usable memory as seen by the domain.", gauge),
		memUnused:    vmiFamily("kubevirt_vmi_memory_unused_bytes", "The amount of memory left completely unused by the system.", gauge),
		memCached:    vmiFamily("kubevirt_vmi_memory_cached_bytes", "The amount of memory that is being used to cache I/O and is available to be reclaimed.", gauge),
		memSwapIn:    vmiFamily("kubevirt_vmi_memory_swap_in_traffic_bytes", "The total amount of data read from swap space of the guest in bytes.", gauge),
		memSwapOut:   vmiFamily("kubevirt_vmi_memory_swap_out_traffic_bytes", "The total amount of memory written out to swap space of the guest in bytes.", gauge),
		memMajFault:  vmiFamily("kubevirt_vmi_memory_pgmajfault_total", "The number of page faults when disk IO was required.", counter),
		memMinFault:  vmiFamily("kubevirt_vmi_memory_pgminfault_total", "The number of other page faults, when disk IO was not required.", counter),
		memBalloon:   vmiFamily("kubevirt_vmi_memory_actual_balloon_bytes", "Current balloon size in bytes.", gauge),
		memUsable:    vmiFamily("kubevirt_vmi_memory_usable_bytes", "The amount of memory which can be reclaimed by balloon without pushing the guest system to swap.", gauge),
		memDomain:    vmiFamily("kubevirt_vmi_memory_domain_bytes", "The amount of memory in bytes allocated to the domain (current balloon target).", gauge),

		netRxBytes:   vmiFamily("kubevirt_vmi_network_receive_bytes_total", "Total network traffic received in bytes.", counter, "interface"),
		netTxBytes:   vmiFamily("kubevirt_vmi_network_transmit_bytes_total", "Total network traffic transmitted in bytes.", counter, "interface"),
		netRxPackets: vmiFamily("kubevirt_vmi_network_receive_packets_total", "Total network traffic received packets.", counter, "interface"),
		netTxPackets: vmiFamily("kubevirt_vmi_network_transmit_packets_total", "Total network traffic transmitted packets.", counter, "interface"),
		netRxErrors:  vmiFamily("kubevirt_vmi_network_receive_errors_total", "Total network received error packets.", counter, "interface"),
		netTxErrors:  vmiFamily("kubevirt_vmi_network_transmit_errors_total", "Total network transmitted error packets.", counter, "interface"),
		netRxDropped: vmiFamily("kubevirt_vmi_network_receive_packets_dropped_total", "The total number of rx packets dropped on vNIC interfaces.", counter, "interface"),
		netTxDropped: vmiFamily("kubevirt_vmi_network_transmit_packets_dropped_total", "The total number of tx packets dropped on vNIC interfaces.", counter, "interface"),
		netTraffic:   vmiFamily("kubevirt_vmi_network_traffic_bytes_total", "[Deprecated] Total number of bytes sent and received.", counter, "interface", "type"),

		stIopsRead:   vmiFamily("kubevirt_vmi_storage_iops_read_total", "Total number of I/O read operations.", counter, "drive"),
		stIopsWrite:  vmiFamily("kubevirt_vmi_storage_iops_write_total", "Total number of I/O write operations.", counter, "drive"),
		stReadBytes:  vmiFamily("kubevirt_vmi_storage_read_traffic_bytes_total", "Total number of bytes read from storage.", counter, "drive"),
		stWriteBytes: vmiFamily("kubevirt_vmi_storage_write_traffic_bytes_total", "Total number of written bytes.", counter, "drive"),
		stReadTimes:  vmiFamily("kubevirt_vmi_storage_read_times_seconds_total", "Total time spent on read operations.", counter, "drive"),
		stWriteTimes: vmiFamily("kubevirt_vmi_storage_write_times_seconds_total", "Total time spent on write operations.", counter, "drive"),
		stFlushReqs:  vmiFamily("kubevirt_vmi_storage_flush_requests_total", "Total storage flush requests.", counter, "drive"),
		stFlushTimes: vmiFamily("kubevirt_vmi_storage_flush_times_seconds_total", "Total time spent on cache flushing.", counter, "drive"),

		fsCapacity: vmiFamily("kubevirt_vmi_filesystem_capacity_bytes", "Total VM filesystem capacity in bytes.", gauge, "disk_name", "mount_point", "file_system_type"),
		fsUsed:     vmiFamily("kubevirt_vmi_filesystem_used_bytes", "Used VM filesystem capacity in bytes.", gauge, "disk_name", "mount_point", "file_system_type"),

		dirtyRate: vmiFamily("kubevirt_vmi_dirty_rate_bytes_per_second", "Guest dirty-rate in bytes per second.", gauge),

		migDataTotal:     newFamily("kubevirt_vmi_migration_data_bytes_total", "The total Guest OS data to be migrated to the new VM.", counter, vmiBase...),
		migDataRemaining: newFamily("kubevirt_vmi_migration_data_remaining_bytes", "The remaining guest OS data to be migrated to the new VM.", gauge, vmiBase...),
		migDataProcessed: newFamily("kubevirt_vmi_migration_data_processed_bytes", "The total Guest OS data processed and migrated to the new VM.", gauge, vmiBase...),
		migDirtyRate:     newFamily("kubevirt_vmi_migration_dirty_memory_rate_bytes", "The rate of memory being dirty in the Guest OS.", gauge, vmiBase...),
		migTransferRate:  newFamily("kubevirt_vmi_migration_memory_transfer_rate_bytes", "The rate at which the memory is being transferred.", gauge, vmiBase...),
		migPostCopyFaults: newFamily("virtkit_migration_postcopy_page_faults_total",
			"Page faults the guest took on the target in post-copy, each served from the source over the network.", counter, vmiBase...),

		engine: newEngineFamilies(),

		cpuAffinity: vmiFamily("kubevirt_vmi_node_cpu_affinity", "Number of VMI CPU affinities to node physical cores.", gauge),
		deprecatedMachines: newFamily("kubevirt_node_deprecated_machine_types",
			"List of deprecated machine types based on the capabilities of individual nodes, as detected by the node agent.", gauge, "machine_type", "node"),
		emulation: newFamily("kubevirt_configuration_emulation_enabled",
			"Indicates whether the domains run under software emulation (libvirt domain type qemu) rather than hardware virtualisation (kvm).", gauge),

		nodeMem: newNodeMemoryFamilies(),

		timeouts: newFamily("virtkit_scrape_domain_timeouts_total", "Domain, migration-job or node-memory statistics left out of a scrape because they missed the scrape deadline.", counter, "node"),
		errors:   newFamily("virtkit_scrape_domain_errors_total", "Domain, migration-job or node-memory statistics left out of a scrape because the hypervisor returned an error.", counter, "node"),
	}
}
