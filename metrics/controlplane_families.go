package metrics

type controlPlaneFamilies struct {
	vmiInfo, vmiNonEvictable, vmiAddresses                      *family
	vmiPhaseTransition, vmiFromCreation, vmiFromDeletion        *family
	migStart, migEnd, migSucceeded, migFailed                   *family
	migPending, migScheduling, migUnset, migRunning             *family
	migFromCreation                                             *family
	engine                                                      engineFamilies
	vmInfo, vmCreated                                           *family
	vmGroupTransition                                           map[string]*family
	wqDepth, wqAdds, wqRetries, wqQueueDuration, wqWorkDuration *family
	wqUnfinished, wqLongest                                     *family
	reconciles, reconcileErrors, terminalErrors, requeues       *family
	reconcileTime, activeWorkers, relists                       *family
	listErrors                                                  *family

	vm                                             vmFamilies
	snap                                           snapshotFamilies
	vmiOverhead, vmiOutdated                       *family
	info, apiReady, controllerReady, controllerLed *family
	handlerReady                                   *family
}

func newControlPlaneFamilies() *controlPlaneFamilies {
	vmGroup := func(group, what string) *family {
		return newFamily("kubevirt_vm_"+group+"_status_last_transition_timestamp_seconds",
			"Virtual Machine last transition timestamp to "+what+" status.", counter, "name", "namespace")
	}
	return &controlPlaneFamilies{
		vmiInfo: newFamily("kubevirt_vmi_info", "Information about VirtualMachineInstances.", gauge,
			"node", "namespace", "name", "phase", "os", "workload", "flavor", "instance_type", "preference",
			"guest_os_kernel_release", "guest_os_machine", "guest_os_arch", "guest_os_name", "guest_os_version_id", "evictable", "outdated",
			"vmi_pod"),
		vmiNonEvictable: newFamily("kubevirt_vmi_non_evictable",
			"Indication for a VirtualMachine that its eviction strategy is set to Live Migration but is not migratable.", gauge,
			"node", "namespace", "name"),
		vmiAddresses: newFamily("kubevirt_vmi_status_addresses",
			"The addresses of a VirtualMachineInstance, by network interface.", gauge,
			"node", "namespace", "name", "vnic_name", "interface_name", "address", "type"),
		vmiPhaseTransition: newHistogramFamily("kubevirt_vmi_phase_transition_time_seconds",
			"Histogram of VM phase transitions duration between different phases in seconds.", "phase", "last_phase"),
		vmiFromCreation: newHistogramFamily("kubevirt_vmi_phase_transition_time_from_creation_seconds",
			"Histogram of VM phase transitions duration from creation time in seconds.", "phase"),
		vmiFromDeletion: newHistogramFamily("kubevirt_vmi_phase_transition_time_from_deletion_seconds",
			"Histogram of VM phase transitions duration from deletion time in seconds.", "phase"),

		migStart: newFamily("kubevirt_vmi_migration_start_time_seconds", "The time at which the migration started.", gauge,
			"node", "namespace", "name", "migration_name"),
		migEnd: newFamily("kubevirt_vmi_migration_end_time_seconds", "The time at which the migration ended.", gauge,
			"node", "namespace", "name", "migration_name", "status"),
		migSucceeded:  newFamily("kubevirt_vmi_migration_succeeded", "Indicates if the VMI migration succeeded.", gauge, "vmi", "vmim", "namespace"),
		migFailed:     newFamily("kubevirt_vmi_migration_failed", "Indicates if the VMI migration failed.", gauge, "vmi", "vmim", "namespace"),
		migPending:    newFamily("kubevirt_vmi_migrations_in_pending_phase", "Number of current pending migrations.", gauge),
		migScheduling: newFamily("kubevirt_vmi_migrations_in_scheduling_phase", "Number of current scheduling migrations.", gauge),
		migUnset:      newFamily("kubevirt_vmi_migrations_in_unset_phase", "Number of current unset migrations.", gauge),
		migRunning:    newFamily("kubevirt_vmi_migrations_in_running_phase", "Number of current running migrations.", gauge),
		migFromCreation: newHistogramFamily("kubevirt_vmi_migration_phase_transition_time_from_creation_seconds",
			"Histogram of VM migration phase transitions duration from creation time in seconds.", "phase"),
		engine: newEngineFamilies(),
		snap:   newSnapshotFamilies(),

		vmInfo: newFamily("kubevirt_vm_info", "Information about Virtual Machines.", gauge,
			"name", "namespace", "status", "status_group", "os", "workload", "flavor", "instance_type", "preference", "machine_type"),
		vmCreated: newFamily("kubevirt_vm_create_date_timestamp_seconds", "Virtual Machine creation timestamp.", gauge, "name", "namespace"),
		vmGroupTransition: map[string]*family{
			"running":     vmGroup("running", "running"),
			"non_running": vmGroup("non_running", "paused/stopped"),
			"starting":    vmGroup("starting", "starting"),
			"migrating":   vmGroup("migrating", "migrating"),
			"error":       vmGroup("error", "error"),
		},

		wqDepth:   newFamily("kubevirt_workqueue_depth", "Current depth of workqueue.", gauge, "name"),
		wqAdds:    newFamily("kubevirt_workqueue_adds_total", "Total number of adds handled by workqueue.", counter, "name"),
		wqRetries: newFamily("kubevirt_workqueue_retries_total", "Total number of retries handled by workqueue.", counter, "name"),
		wqQueueDuration: newHistogramFamily("kubevirt_workqueue_queue_duration_seconds",
			"How long an item stays in workqueue before being requested.", "name"),
		wqWorkDuration: newHistogramFamily("kubevirt_workqueue_work_duration_seconds",
			"How long in seconds processing an item from workqueue takes.", "name"),
		wqUnfinished: newFamily("kubevirt_workqueue_unfinished_work_seconds",
			"How many seconds of work have been in progress without being observed by work_duration.", gauge, "name"),
		wqLongest: newFamily("kubevirt_workqueue_longest_running_processor_seconds",
			"How many seconds has the longest running processor for workqueue been running.", gauge, "name"),

		reconciles:      newFamily("virtkit_controller_reconcile_total", "Reconcile calls, whatever their outcome.", counter, "controller"),
		reconcileErrors: newFamily("virtkit_controller_reconcile_errors_total", "Reconciles that returned an error and were retried (panics included).", counter, "controller"),
		terminalErrors:  newFamily("virtkit_controller_reconcile_terminal_errors_total", "Reconciles that returned a terminal error (not retried).", counter, "controller"),
		requeues:        newFamily("virtkit_controller_requeues_total", "Reconciles that asked to be requeued after a delay.", counter, "controller"),
		reconcileTime: newHistogramFamily("virtkit_controller_reconcile_time_seconds",
			"Time per reconcile.", "controller"),
		activeWorkers: newFamily("virtkit_controller_active_workers", "Reconciles running now.", gauge, "controller"),
		relists:       newFamily("virtkit_controller_relists_total", "Lists after start, resync or watch expiry.", counter, "controller"),

		listErrors: listErrorsFamily(),

		vm: newVMFamilies(),
		vmiOverhead: newFamily("kubevirt_vmi_launcher_memory_overhead_bytes",
			"Estimation of the memory the hypervisor process of a VMI needs beyond guest memory.", gauge, "namespace", "name"),
		vmiOutdated: newFamily("kubevirt_vmi_number_of_outdated",
			"Indication for the total number of VirtualMachineInstance workloads that are not running within the most up-to-date version of the virt-launcher environment.", gauge),
		info:            newFamily("kubevirt_info", "Version information.", gauge, "goversion", "kubeversion"),
		apiReady:        newFamily("kubevirt_virt_api_ready_status", "Indication for a virt-api server that is ready to serve requests.", gauge),
		controllerReady: newFamily("kubevirt_virt_controller_ready_status", "Indication for a virt-controller that is ready to take the lead.", gauge),
		controllerLed:   newFamily("kubevirt_virt_controller_leading_status", "Indication for an operating virt-controller.", gauge),
		handlerReady:    newFamily("kubevirt_virt_handler_ready_status", "Indication for a virt-handler that is ready to serve requests.", gauge, "node"),
	}
}
