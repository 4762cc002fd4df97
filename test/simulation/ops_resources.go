package simulation

import (
	"context"
	"math/rand/v2"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// InvHotplug: at quiescence a Running VMI's status.currentCPUTopology
// counts the vCPUs its domain has, and its spec's vCPUs and memory.guest
// are what the domain was given (status.memory.guestRequested), unless
// the VMI records the change as failed (HotVCPUChange or HotMemoryChange
// False).
const InvHotplug = "hotplug"

// socketChoices are the sockets set-sockets draws from: within the
// defaulted maxSockets (4 × the sockets a VMI started with), a reduction,
// and beyond it.
var socketChoices = []uint32{1, 2, 3, 4, 9}

// guestChoices are the memory.guest values set-memory draws from: the
// templates' 128Mi (too little for memory hot-plug), 1Gi (a restart gives
// the VM a maxGuest), and 2Gi and 3Gi within that maxGuest.
var guestChoices = []string{"128Mi", "1Gi", "2Gi", "3Gi"}

// resourceOps change a VM's CPU sockets and guest memory, which KubeVirt's
// LiveUpdate rollout brings to its running VMI within the maxima and
// answers with RestartRequired beyond them.
func resourceOps() []opSpec {
	vmOp := func(n int) func(r *rand.Rand) Op {
		return func(r *rand.Rand) Op { return Op{Target: pick(r, "vm", poolVMs), N: r.IntN(n)} }
	}
	return []opSpec{
		{name: "set-sockets", weight: 2, gen: vmOp(len(socketChoices)),
			run: func(ctx context.Context, s system, op Op) error {
				return editTemplate(ctx, s, op.Target, func(d *virtkit.DomainSpec) {
					d.CPU = &virtkit.CPU{Sockets: socketChoices[op.N%len(socketChoices)], Cores: 1, Threads: 1}
				})
			}},
		{name: "set-memory", weight: 2, gen: vmOp(len(guestChoices)),
			run: func(ctx context.Context, s system, op Op) error {
				return editTemplate(ctx, s, op.Target, func(d *virtkit.DomainSpec) {
					g := resource.MustParse(guestChoices[op.N%len(guestChoices)])
					d.Memory = &virtkit.Memory{Guest: &g}
				})
			}},
	}
}

// editTemplate changes a VM's template as a user's update would.
func editTemplate(ctx context.Context, s system, name string, edit func(*virtkit.DomainSpec)) error {
	return store.RetryOnConflict(ctx, store.Backoff{}, func(ctx context.Context) error {
		vm := &virtkit.VirtualMachine{}
		if err := s.st().Get(ctx, store.Key{Namespace: Namespace, Name: name}, vm); err != nil {
			return err
		}
		if vm.Spec.Template == nil {
			return nil
		}
		edit(&vm.Spec.Template.Spec.Domain)
		return s.st().Update(ctx, vm)
	})
}

// checkHotplug is InvHotplug over the VMIs and active domains at
// quiescence (active: domain name -> its active copies).
func (c *checker) checkHotplug(out *[]Violation, step int, vmis []virtkit.VirtualMachineInstance, active map[string][]domainAt, ongoing map[string]bool) {
	for i := range vmis {
		v := &vmis[i]
		key := v.Namespace + "/" + v.Name
		doms := active[v.Namespace+"_"+v.Name]
		if v.Status.Phase != virtkit.Running || v.DeletionTimestamp != nil || ongoing[key] || len(doms) != 1 {
			continue
		}
		vcpus := doms[0].info.VCPUs
		if t := v.Status.CurrentCPUTopology; t != nil && vcpus > 0 {
			if got := int(max(t.Sockets, 1) * max(t.Cores, 1) * max(t.Threads, 1)); got != vcpus {
				c.report(out, step, InvHotplug, "VMI %s status.currentCPUTopology counts %d vCPUs, its domain has %d", key, got, vcpus)
			}
		}
		if cpu := v.Spec.Domain.CPU; cpu != nil && cpu.MaxSockets > 0 && vcpus > 0 && !changeFailed(v, virtkit.VirtualMachineInstanceVCPUChange) {
			if want := int(max(cpu.Sockets, 1) * max(cpu.Cores, 1) * max(cpu.Threads, 1)); want != vcpus {
				c.report(out, step, InvHotplug, "VMI %s asks for %d vCPUs, its domain has %d", key, want, vcpus)
			}
		}
		if m, st := v.Spec.Domain.Memory, v.Status.Memory; m != nil && m.Guest != nil && m.MaxGuest != nil && st != nil &&
			st.GuestRequested != nil && !changeFailed(v, virtkit.VirtualMachineInstanceMemoryChange) && !m.Guest.Equal(*st.GuestRequested) {
			c.report(out, step, InvHotplug, "VMI %s asks for %s of memory, its domain was given %s", key, m.Guest.String(), st.GuestRequested.String())
		}
	}
}

func changeFailed(v *virtkit.VirtualMachineInstance, t virtkit.ConditionType) bool {
	c := virtkit.GetCondition(v.Status.Conditions, t)
	return c != nil && c.Status == virtkit.ConditionFalse
}
