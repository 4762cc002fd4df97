package node

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
)

// Reasons of the conditions and events of CPU and memory hot-plug.
const (
	// ReasonMemoryHotplugFailed is KubeVirt's reason of a HotMemoryChange
	// condition that is False: the guest's memory could not be changed,
	// and the VM needs a restart to get what its template asks for.
	ReasonMemoryHotplugFailed = "Memory Hotplug Failed"
	// ReasonCPUHotplugFailed is the same for vCPUs (HotVCPUChange False).
	// KubeVirt only logs and records an event when a vCPU change fails;
	// virtkit also keeps the failure on the VMI so it is not retried.
	ReasonCPUHotplugFailed = "CPU Hotplug Failed"
	// EventReasonHotplugFailed is the reason of the Warning event recorded
	// when a vCPU or memory change failed (KubeVirt's messages: "failed to
	// change vCPUs", "failed to update guest memory").
	EventReasonHotplugFailed = "HotplugFailed"
)

// vcpuCount is sockets × cores × threads, zeros counted as 1.
func vcpuCount(cpu *virtkit.CPU) int {
	n := 1
	for _, f := range []uint32{cpu.Sockets, cpu.Cores, cpu.Threads} {
		if f > 0 {
			n *= int(f)
		}
	}
	return n
}

// syncHotplugResources brings a running domain's vCPUs and pluggable
// memory to the VMI's spec: cpu.sockets and memory.guest, which the VM
// controller changes under KubeVirt's LiveUpdate rollout. vCPUs are
// plugged with the hypervisor's SetVCPUs (libvirt virDomainSetVcpusFlags);
// memory by the requested size of the domain's virtio-mem device
// (guest - boot memory). KubeVirt does both on the target of a live
// migration to a bigger pod; a virtkit node has no pod to grow and does
// it in place. A change that fails is recorded as the HotVCPUChange or
// HotMemoryChange condition with status False (and a Warning event), and
// not retried: the VM controller then asks for a restart.
func (a *Agent) syncHotplugResources(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info *hypervisor.DomainInfo) error {
	if !info.State.IsActive() {
		return nil
	}
	hp, ok := a.opts.Hypervisor.(hypervisor.ResourceHotplugger)
	if !ok {
		hp = noHotplug{}
	}
	if ms := vmi.Status.MigrationState; ms != nil && !ms.Completed {
		return nil // the migration carries the domain as it is; changes wait for its end
	}
	var failures []virtkit.Condition
	changed := false
	if cpu := vmi.Spec.Domain.CPU; cpu != nil && cpu.MaxSockets > 0 && info.VCPUs > 0 &&
		!failed(vmi, virtkit.VirtualMachineInstanceVCPUChange) {
		if want := vcpuCount(cpu); want != info.VCPUs {
			if err := hp.SetVCPUs(ctx, domName, want); err != nil {
				if ctx.Err() != nil {
					return err
				}
				a.log.Warn("vCPU hot-plug failed", "domain", domName, "vcpus", want, "err", err)
				a.event(ctx, vmi, virtkit.EventTypeWarning, EventReasonHotplugFailed, "HotplugCPU", "failed to change vCPUs: %v", err)
				failures = append(failures, virtkit.Condition{
					Type: virtkit.VirtualMachineInstanceVCPUChange, Status: virtkit.ConditionFalse, Reason: ReasonCPUHotplugFailed,
					Message: fmt.Sprintf("changing the vCPUs from %d to %d failed", info.VCPUs, want),
				})
			} else {
				a.log.Info("hot-plugged vCPUs", "domain", domName, "from", info.VCPUs, "to", want)
				changed = true
			}
		}
	}
	if m := vmi.Spec.Domain.Memory; m != nil && m.Guest != nil && m.MaxGuest != nil &&
		!failed(vmi, virtkit.VirtualMachineInstanceMemoryChange) && !memoryApplied(vmi) {
		err := a.requestGuestMemory(ctx, hp, domName, info, m.Guest.Value())
		switch {
		case errors.Is(err, errNoChange):
		case err != nil:
			if ctx.Err() != nil {
				return err
			}
			a.log.Warn("memory hot-plug failed", "domain", domName, "guest", m.Guest.String(), "err", err)
			a.event(ctx, vmi, virtkit.EventTypeWarning, EventReasonHotplugFailed, "HotplugMemory", "failed to update guest memory: %v", err)
			failures = append(failures, virtkit.Condition{
				Type: virtkit.VirtualMachineInstanceMemoryChange, Status: virtkit.ConditionFalse, Reason: ReasonMemoryHotplugFailed,
				Message: "memory hotplug failed, the VM configuration is not supported",
			})
		default:
			a.log.Info("requested guest memory", "domain", domName, "guest", m.Guest.String())
			changed = true
		}
	}
	if len(failures) > 0 {
		now := a.now()
		for _, c := range failures {
			virtkit.SetCondition(&vmi.Status.Conditions, c, now)
		}
		if err := a.opts.Store.UpdateStatus(ctx, vmi); err != nil {
			return err
		}
	}
	if changed {
		fresh, err := a.opts.Hypervisor.Info(ctx, domName)
		if err != nil {
			return err
		}
		*info = fresh
	}
	return nil
}

// errNoChange: the domain already has the memory asked for.
var errNoChange = errors.New("no change")

// requestGuestMemory asks for guest bytes of guest memory: the boot memory
// plus what the virtio-mem device is asked to plug.
func (a *Agent) requestGuestMemory(ctx context.Context, hp hypervisor.ResourceHotplugger, domName string, info *hypervisor.DomainInfo, guest int64) error {
	pm, err := hp.PluggableMemory(ctx, domName)
	if errors.Is(err, hypervisor.ErrNotSupported) {
		if uint64(guest) == info.MaxMemoryBytes {
			return errNoChange
		}
		return fmt.Errorf("memory.guest %d bytes: %w", guest, err)
	}
	if err != nil {
		return err
	}
	boot := info.MaxMemoryBytes - pm.SizeBytes
	if guest < 0 || uint64(guest) < boot {
		return fmt.Errorf("memory.guest %d bytes is below the %d bytes the guest booted with: %w", guest, boot, hypervisor.ErrInvalidArgument)
	}
	want := uint64(guest) - boot
	if want == pm.RequestedBytes {
		return errNoChange
	}
	return hp.RequestPluggableMemory(ctx, domName, want)
}

// memoryApplied reports whether the VMI's status says its domain was
// already asked for the spec's memory.guest (which spares reading the
// domain's XML at every status refresh).
func memoryApplied(vmi *virtkit.VirtualMachineInstance) bool {
	st := vmi.Status.Memory
	return st != nil && st.GuestRequested != nil && st.GuestRequested.Equal(*vmi.Spec.Domain.Memory.Guest)
}

// failed reports whether the VMI records a failed change of this kind.
func failed(vmi *virtkit.VirtualMachineInstance, t virtkit.ConditionType) bool {
	c := virtkit.GetCondition(vmi.Status.Conditions, t)
	return c != nil && c.Status == virtkit.ConditionFalse
}

// resourceStatus writes the vCPU topology and guest memory the domain has
// into the VMI's status: currentCPUTopology from the hypervisor's vCPU
// count (sockets = vCPUs / (cores × threads)), and memory from the
// domain's sizes: guestAtBoot once, guestCurrent and guestRequested as the
// boot memory plus what the virtio-mem device has plugged and was asked
// to plug (without such a device: the balloon's current size and the
// memory.guest the guest booted with).
func (a *Agent) resourceStatus(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo) {
	if cpu := vmi.Spec.Domain.CPU; cpu != nil {
		topo := &virtkit.CPUTopology{Sockets: cpu.Sockets, Cores: cpu.Cores, Threads: cpu.Threads}
		if info.VCPUs > 0 {
			per := max(cpu.Cores, 1) * max(cpu.Threads, 1)
			topo.Sockets = uint32(info.VCPUs) / per
		}
		vmi.Status.CurrentCPUTopology = topo
	}
	if info.MaxMemoryBytes == 0 {
		return
	}
	ms := &virtkit.MemoryStatus{}
	if vmi.Status.Memory != nil {
		ms = vmi.Status.Memory.DeepCopy()
	}
	bytes := func(n uint64) *resource.Quantity { return resource.NewQuantity(int64(n), resource.BinarySI) }
	var pm hypervisor.PluggableMemory
	pluggable := false
	if hp, ok := a.opts.Hypervisor.(hypervisor.ResourceHotplugger); ok {
		if m := vmi.Spec.Domain.Memory; m != nil && m.MaxGuest != nil {
			var err error
			pm, err = hp.PluggableMemory(ctx, domName)
			pluggable = err == nil && pm.SizeBytes <= info.MaxMemoryBytes
		}
	}
	if pluggable {
		boot := info.MaxMemoryBytes - pm.SizeBytes
		if ms.GuestAtBoot == nil {
			ms.GuestAtBoot = bytes(boot)
		}
		ms.GuestCurrent = bytes(boot + pm.CurrentBytes)
		ms.GuestRequested = bytes(boot + pm.RequestedBytes)
		vmi.Status.Memory = ms
		return
	}
	if ms.GuestAtBoot == nil {
		// KubeVirt's: the memory.guest the VMI was created with.
		ms.GuestAtBoot = bytes(info.MaxMemoryBytes)
		if g := vmi.Spec.Domain.Memory; g != nil && g.Guest != nil {
			boot := g.Guest.DeepCopy()
			ms.GuestAtBoot = &boot
		}
	}
	if info.MemoryBytes > 0 {
		ms.GuestCurrent = bytes(info.MemoryBytes)
	}
	if g := vmi.Spec.Domain.Memory; g != nil && g.Guest != nil && ms.GuestRequested == nil {
		// Without a virtio-mem device the domain keeps what it booted with.
		req := g.Guest.DeepCopy()
		ms.GuestRequested = &req
	}
	vmi.Status.Memory = ms
}

// noHotplug stands in for a hypervisor that cannot change a running
// domain's vCPUs or memory: every change fails (and is recorded so).
type noHotplug struct{}

func (noHotplug) SetVCPUs(context.Context, string, int) error {
	return hypervisor.NotSupportedError("vCPU hot-plug", "the hypervisor cannot change a running domain's vCPUs")
}

func (noHotplug) PluggableMemory(context.Context, string) (hypervisor.PluggableMemory, error) {
	return hypervisor.PluggableMemory{}, hypervisor.NotSupportedError("memory hot-plug", "the hypervisor cannot change a running domain's memory")
}

func (noHotplug) RequestPluggableMemory(context.Context, string, uint64) error {
	return hypervisor.NotSupportedError("memory hot-plug", "the hypervisor cannot change a running domain's memory")
}
