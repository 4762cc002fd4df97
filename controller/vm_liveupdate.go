package controller

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
)

// VM condition and failure reasons of KubeVirt's LiveUpdate rollout.
const (
	// ReasonNotLiveUpdatable is the reason of the RestartRequired
	// condition: the template changed in a way the running VMI cannot
	// follow.
	ReasonNotLiveUpdatable = "NotLiveUpdatable"
	// ReasonHotplugCPUError is KubeVirt's reason of the Failure condition
	// when a CPU change cannot be handled now (the VMI is migrating).
	ReasonHotplugCPUError = "HotPlugCPUError"
	// ReasonHotplugMemoryError is the same for memory.
	ReasonHotplugMemoryError = "HotPlugMemoryError"
)

// KubeVirt's RestartRequired messages.
const (
	msgNotLiveUpdatable      = "a non-live-updatable field was changed in the template spec"
	msgSocketsAboveMax       = "CPU sockets updated in template spec to a value higher than what's available"
	msgSocketsReduced        = "Reduction of CPU socket count requires a restart"
	msgCPUHotplugARM         = "ARM doesn't support CPU hotplug"
	msgCPUHotplugFailed      = "CPU sockets updated in template spec. CPU-hotplug failed and is not available for this VM configuration"
	msgMemHotplugFailed      = "memory updated in template spec. Memory-hotplug failed and is not available for this VM configuration"
	msgMemHotplugNoMax       = "memory updated in template spec. Memory-hotplug is not available for this VM configuration"
	msgMemBelowBoot          = "memory updated in template spec to a value lower than what the VM started with"
	msgMemAboveMax           = "memory updated in template spec to a value higher than what's available"
	msgMemHotplugUnsupported = "memory hotplug not supported, "
)

// hotplugPoll is how soon a VM whose VMI is still applying an earlier CPU
// or memory change is looked at again.
const hotplugPoll = time.Second

// Memory hot-plug alignment and minimum, as KubeVirt's: QEMU's
// recommended virtio-mem block (a transparent huge page), a 1Gi huge page,
// and 1Gi of guest memory (enough for the guest kernel's structures and
// the PCI hole).
const (
	hotplugBlockBytes        = 2 << 20
	hotplugBlockBytes1GiPage = 1 << 30
	hotplugMinGuestBytes     = 1 << 30
)

// liveUpdateRollout reports whether changes of a running VM's
// live-updatable fields reach its VMI (KubeVirt's LiveUpdate rollout
// strategy). The cluster's rollout strategy is what its defaults were
// made with: Stage leaves out the hot-plug maxima (NoHotplug).
func (r *VMReconciler) liveUpdateRollout() bool { return !r.o.Defaults.NoHotplug }

// syncLiveUpdate decides whether the running VMI can follow its VM's
// template: a change of the template that is not live-updatable (or one
// beyond what the running guest can take) sets s.restartRequired to
// KubeVirt's RestartRequired message; under the LiveUpdate rollout a
// change of cpu.sockets (up to the VMI's maxSockets) or memory.guest (up
// to its maxGuest) is written to the VMI's spec, which the node agent then
// applies to the running domain, as KubeVirt's VM controller does.
func (r *VMReconciler) syncLiveUpdate(ctx context.Context, s *vmSync) error {
	vm, vmi := s.vm, s.vmi
	s.restartChecked = true
	s.restartRequired = ""
	if vmi == nil || vmi.IsFinal() || vmi.DeletionTimestamp != nil || s.deletedVMI || vm.Spec.Template == nil {
		return nil
	}
	live := r.liveUpdateRollout()
	if r.templateChanged(vm, vmi, live) {
		s.restartRequired = msgNotLiveUpdatable
		return nil
	}
	if !live || vm.Spec.Instancetype != nil || vm.Spec.Preference != nil || sameGeneration(vm, vmi) {
		return nil
	}
	rendered, err := r.render(vm)
	if err != nil {
		return nil // templateChanged reports nothing either: no VMI can be made from it
	}
	if err := r.syncCPUChange(ctx, s, &rendered.Spec); err != nil {
		return err
	}
	return r.syncMemoryChange(ctx, s, &rendered.Spec)
}

// syncCPUChange is KubeVirt's handling of a CPU change request.
func (r *VMReconciler) syncCPUChange(ctx context.Context, s *vmSync, want *virtkit.VirtualMachineInstanceSpec) error {
	tmpl := s.vm.Spec.Template.Spec.Domain.CPU
	cur := s.vmi.Spec.Domain.CPU
	vmi := s.vmi
	if tmpl == nil || cur == nil {
		return nil
	}
	if c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceVCPUChange); c != nil && c.Status == virtkit.ConditionFalse {
		// The node could not plug what the VMI asks for (as KubeVirt's
		// memory hot-plug failure, which it checks the same way).
		s.restartRequired = msgCPUHotplugFailed
		return nil
	}
	if tmpl.Sockets == cur.Sockets {
		return nil
	}
	if t := vmi.Status.CurrentCPUTopology; t != nil && vcpus(t.Sockets, t.Cores, t.Threads) != vcpus(cur.Sockets, cur.Cores, cur.Threads) {
		s.requeueSoon(hotplugPoll) // another CPU hot-plug is in progress
		return nil
	}
	if migrating(s) {
		s.syncErr = errors.New("CPU hotplug is not allowed while VMI is migrating")
		s.failReason = ReasonHotplugCPUError
		return nil
	}
	switch {
	case tmpl.Sockets > cur.MaxSockets:
		s.restartRequired = msgSocketsAboveMax
		return nil
	case tmpl.Sockets < cur.Sockets:
		s.restartRequired = msgSocketsReduced
		return nil
	case want.Architecture == "arm64":
		s.restartRequired = msgCPUHotplugARM
		return nil
	}
	vmi = vmi.DeepCopy()
	vmi.Spec.Domain.CPU.Sockets = tmpl.Sockets
	if err := r.o.Store.Update(ctx, vmi); err != nil {
		return err
	}
	r.o.Logger.Info("hotplugging cpu", "vmi", vmi.Namespace+"/"+vmi.Name, "sockets", tmpl.Sockets)
	s.vmi = vmi
	return nil
}

// syncMemoryChange is KubeVirt's handling of a memory hot-plug request.
func (r *VMReconciler) syncMemoryChange(ctx context.Context, s *vmSync, want *virtkit.VirtualMachineInstanceSpec) error {
	tmpl := s.vm.Spec.Template.Spec.Domain.Memory
	vmi := s.vmi
	cur := vmi.Spec.Domain.Memory
	st := vmi.Status.Memory
	if tmpl == nil || tmpl.Guest == nil || cur == nil || cur.Guest == nil || st == nil || st.GuestCurrent == nil {
		return nil
	}
	if c := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceMemoryChange); c != nil && c.Status == virtkit.ConditionFalse {
		s.restartRequired = msgMemHotplugFailed
		return nil
	}
	if tmpl.Guest.Equal(*cur.Guest) {
		return nil
	}
	if cur.MaxGuest == nil {
		s.restartRequired = msgMemHotplugNoMax
		return nil
	}
	if st.GuestRequested != nil && !st.GuestRequested.Equal(*cur.Guest) {
		s.requeueSoon(hotplugPoll) // another memory hot-plug is in progress
		return nil
	}
	if migrating(s) {
		s.syncErr = errors.New("memory hotplug is not allowed while VMI is migrating")
		s.failReason = ReasonHotplugMemoryError
		return nil
	}
	if problem := liveUpdateMemoryProblem(want, *tmpl.Guest, *cur.MaxGuest); problem != "" {
		s.restartRequired = msgMemHotplugUnsupported + problem
		return nil
	}
	if st.GuestAtBoot != nil && tmpl.Guest.Cmp(*st.GuestAtBoot) < 0 {
		s.restartRequired = msgMemBelowBoot
		return nil
	}
	if tmpl.Guest.Cmp(*cur.MaxGuest) > 0 {
		s.restartRequired = msgMemAboveMax
		return nil
	}
	vmi = vmi.DeepCopy()
	g := tmpl.Guest.DeepCopy()
	vmi.Spec.Domain.Memory.Guest = &g
	if err := r.o.Store.Update(ctx, vmi); err != nil {
		return err
	}
	r.o.Logger.Info("hotplugging memory", "vmi", vmi.Namespace+"/"+vmi.Name, "guest", g.String())
	s.vmi = vmi
	return nil
}

// liveUpdateMemoryProblem is KubeVirt's check that a guest can get
// memory hot-plugged: no realtime vCPUs, no NUMA passthrough, no
// confidential guest, guest and maxGuest aligned to the block size, guest
// within maxGuest, amd64, and at least 1Gi of guest memory. It returns
// KubeVirt's message for the first problem, or "" when there is none.
func liveUpdateMemoryProblem(spec *virtkit.VirtualMachineInstanceSpec, guest, maxGuest resource.Quantity) string {
	d := &spec.Domain
	block := int64(hotplugBlockBytes)
	if d.Memory != nil && d.Memory.Hugepages != nil && d.Memory.Hugepages.PageSize == "1Gi" {
		block = hotplugBlockBytes1GiPage
	}
	align := resource.NewQuantity(block, resource.BinarySI).String()
	switch {
	case d.CPU != nil && d.CPU.Realtime != nil:
		return "Memory hotplug is not compatible with realtime VMs"
	case d.CPU != nil && d.CPU.NUMA != nil && d.CPU.NUMA.GuestMappingPassthrough != nil:
		return "Memory hotplug is not compatible with guest mapping passthrough"
	case d.LaunchSecurity != nil:
		return "Memory hotplug is not compatible with encrypted VMs"
	case guest.Cmp(maxGuest) > 0:
		return "Guest memory is greater than the configured maxGuest memory"
	case guest.Value()%block != 0:
		return "Guest memory must be " + align + " aligned"
	case maxGuest.Value()%block != 0:
		return "MaxGuest must be " + align + " aligned"
	case spec.Architecture != "amd64":
		return "Memory hotplug is only available for x86_64 VMs"
	case guest.Value() < hotplugMinGuestBytes:
		return "Memory hotplug is only available for VMs with at least 1Gi of guest memory"
	}
	return ""
}

// neutralizeLiveUpdatable makes the fields the LiveUpdate rollout changes
// on a running VMI equal in want (rendered from the VM's template) and got
// (the VMI), so only other changes count as needing a restart: cpu.sockets
// and memory.guest when the template names them, and the hot-plug maxima
// the defaults derive from them when the template does not name those.
func neutralizeLiveUpdatable(tmpl *virtkit.DomainSpec, want, got *virtkit.VirtualMachineInstanceSpec) {
	wc, gc := want.Domain.CPU, got.Domain.CPU
	if tmpl.CPU != nil && wc != nil && gc != nil {
		wc.Sockets = gc.Sockets
		if tmpl.CPU.MaxSockets == 0 {
			wc.MaxSockets = gc.MaxSockets
		}
	}
	wm, gm := want.Domain.Memory, got.Domain.Memory
	if tmpl.Memory != nil && tmpl.Memory.Guest != nil && wm != nil && gm != nil {
		wm.Guest = gm.Guest
		if tmpl.Memory.MaxGuest == nil {
			wm.MaxGuest = gm.MaxGuest
		}
	}
}

// vcpus is sockets × cores × threads, zeros counted as 1.
func vcpus(sockets, cores, threads uint32) uint32 {
	return max(sockets, 1) * max(cores, 1) * max(threads, 1)
}

// migrating reports whether the VM's VMI is in a live migration that has
// not ended.
func migrating(s *vmSync) bool {
	ms := s.vmi.Status.MigrationState
	return ms != nil && !ms.Completed
}

// requeueSoon asks for another reconcile within d.
func (s *vmSync) requeueSoon(d time.Duration) {
	if s.requeue <= 0 || d < s.requeue {
		s.requeue = d
	}
}
