package node

import (
	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
)

// phaseFor maps a domain's state and reason to the VMI phase, following
// virt-handler's calculateVmPhaseForStatusReason. acpi says
// whether the guest had ACPI (a destroyed ACPI guest was killed after its
// grace period, so the stop was not voluntary). ok is false when the state
// says nothing new (a domain that left by migration).
func phaseFor(state hypervisor.DomainState, reason hypervisor.StateReason, acpi bool) (phase virtkit.VirtualMachineInstancePhase, ok bool) {
	switch state {
	case hypervisor.StateShutoff, hypervisor.StateCrashed:
		switch reason {
		case hypervisor.ReasonCrashed, hypervisor.ReasonPanicked, hypervisor.ReasonFailed:
			return virtkit.Failed, true
		case hypervisor.ReasonDestroyed:
			if acpi {
				return virtkit.Failed, true
			}
			return virtkit.Succeeded, true
		case hypervisor.ReasonShutdown, hypervisor.ReasonSaved, hypervisor.ReasonFromSnapshot:
			return virtkit.Succeeded, true
		case hypervisor.ReasonMigrated:
			return "", false
		}
		return virtkit.Failed, true
	case hypervisor.StatePaused:
		if reason == hypervisor.ReasonPostcopyFailed {
			return virtkit.Failed, true
		}
		return virtkit.Running, true
	case hypervisor.StateRunning, hypervisor.StateBlocked, hypervisor.StatePMSuspended, hypervisor.StateShutdown:
		return virtkit.Running, true
	}
	return "", false
}

// pausedReason maps a paused domain's reason to the VMI Paused condition's
// reason, or "" when the domain is not paused.
func pausedReason(state hypervisor.DomainState, reason hypervisor.StateReason) string {
	if state != hypervisor.StatePaused {
		return ""
	}
	switch reason {
	case hypervisor.ReasonMigration, hypervisor.ReasonPostcopy:
		return virtkit.PausedByMigrationMonitorReason
	case hypervisor.ReasonIOError:
		return virtkit.PausedIOErrorReason
	}
	return virtkit.PausedByUserReason
}

// acpiEnabled reports whether the guest has ACPI (enabled unless
// features.acpi.enabled is false).
func acpiEnabled(vmi *virtkit.VirtualMachineInstance) bool {
	f := vmi.Spec.Domain.Features
	if f == nil || f.ACPI.Enabled == nil {
		return true
	}
	return *f.ACPI.Enabled
}

// liveMigratable returns the LiveMigratable condition for vmi, checking
// KubeVirt's reasons in its order; the first hit wins.
func liveMigratable(vmi *virtkit.VirtualMachineInstance) virtkit.Condition {
	no := func(reason, msg string) virtkit.Condition {
		return virtkit.Condition{Type: virtkit.VirtualMachineInstanceIsMigratable, Status: virtkit.ConditionFalse, Reason: reason, Message: msg}
	}
	podNets := map[string]bool{}
	for _, n := range vmi.Spec.Networks {
		if n.Pod != nil {
			podNets[n.Name] = true
		}
	}
	_, bridgeAllowed := vmi.Annotations[virtkit.AllowPodBridgeNetworkLiveMigrationAnnotation]
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.Binding != nil {
			// A migration target resolves its networks without the
			// KubeVirt configuration's plugins.
			return no(virtkit.InterfaceNotLiveMigratableReason,
				"cannot migrate VMI with network binding plugin "+iface.Binding.Name+" on a virtkit node")
		}
		if !podNets[iface.Name] {
			continue
		}
		if iface.Masquerade != nil || iface.PasstBinding != nil || (iface.Bridge != nil && bridgeAllowed) {
			continue
		}
		return no(virtkit.InterfaceNotLiveMigratableReason,
			"cannot migrate VMI which does not use masquerade or a migratable plugin to connect to the pod network")
	}
	if d := &vmi.Spec.Domain.Devices; len(d.HostDevices) > 0 || len(d.GPUs) > 0 {
		return no(virtkit.HostDeviceNotLiveMigratableReason, "VMI uses a PCI host devices")
	}
	for _, v := range vmi.Spec.Volumes {
		if v.HostDisk != nil && (v.HostDisk.Shared == nil || !*v.HostDisk.Shared) {
			return no(virtkit.DisksNotLiveMigratableReason, "hostDisk volume "+v.Name+" is not shared")
		}
	}
	if len(vmi.Spec.Domain.Devices.Filesystems) > 0 {
		// libvirt refuses to migrate a domain with a virtiofs device.
		return no(virtkit.VirtIOFSNotLiveMigratableReason, "VMI uses virtiofs")
	}
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		if d.LUN != nil && d.LUN.Reservation {
			return no(virtkit.PersistentReservationNotLiveMigratableReason, "disk "+d.Name+" uses a persistent reservation")
		}
	}
	return virtkit.Condition{Type: virtkit.VirtualMachineInstanceIsMigratable, Status: virtkit.ConditionTrue}
}
