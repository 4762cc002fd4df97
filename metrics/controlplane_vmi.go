package metrics

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
)

// outdatedLauncherLabel marks a VMI whose hypervisor environment is older
// than the installed one (KubeVirt's label; whoever upgrades the hosts
// sets it).
const outdatedLauncherLabel = "kubevirt.io/outdatedLauncherImage"

// vmiPod is the vmi_pod label of kubevirt_vmi_info: virtkit runs no
// launcher pod, so the domain that runs the VMI stands in for it while
// the VMI is on a node.
func vmiPod(vmi *virtkit.VirtualMachineInstance) string {
	if vmi.Status.NodeName == "" || (vmi.Status.Phase != virtkit.Running && vmi.Status.Phase != virtkit.Scheduled) {
		return "<none>"
	}
	return DomainName(vmi.Namespace, vmi.Name)
}

// migrationOutcome is the status label of kubevirt_vmi_migration_end_time_seconds.
func migrationOutcome(ms *virtkit.VirtualMachineInstanceMigrationState) string {
	switch {
	case ms.Failed:
		return "failed"
	case ms.Completed:
		return "succeeded"
	}
	return ""
}

// Parts of virtkit's memory-overhead estimate.
const (
	mib = 1 << 20
	// overheadFixed is the hypervisor process itself (QEMU's code, its
	// libraries and heap) and its share of the node agent.
	overheadFixed = 180 * mib
	// overheadPerVCPU is each vCPU thread's stack and state.
	overheadPerVCPU = 8 * mib
	// overheadVideo is the video memory of the graphics device attached
	// by default.
	overheadVideo = 16 * mib
	// overheadPageTableDivisor: guest page tables take 1/512 of guest
	// memory (8-byte entries for 4 KiB pages).
	overheadPageTableDivisor = 512
)

// memoryOverhead is what the hypervisor process of a VMI needs beyond
// guest memory: status.memory.memoryOverhead when the node recorded it,
// else an estimate from the spec (fixed process cost, per-vCPU cost, page
// tables, video memory).
func memoryOverhead(vmi *virtkit.VirtualMachineInstance) int64 {
	if m := vmi.Status.Memory; m != nil && m.MemoryOverhead != nil {
		return m.MemoryOverhead.Value()
	}
	d := &vmi.Spec.Domain
	n := int64(overheadFixed) + int64(vcpusOf(d.CPU))*overheadPerVCPU + guestMemory(d)/overheadPageTableDivisor
	if a := d.Devices.AutoattachGraphicsDevice; a == nil || *a {
		n += overheadVideo
	}
	return n
}

// parseQuantity is a Kubernetes quantity's value, e.g. a huge page size.
func parseQuantity(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	return q.Value(), nil
}
