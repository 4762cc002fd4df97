package simulation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

// InvHotplugVolumes: at quiescence a running VMI's domain holds exactly
// the disks of its spec (hot-plugged ones included), and each
// hot-pluggable volume is reported Ready.
const InvHotplugVolumes = "hotplug-volumes"

// hotplugVolumes is how many hot-plug volume names the ops draw from.
const hotplugVolumes = 2

// hotplugOps are volume hotplug's operations: virtctl addvolume and
// removevolume on the pool's VMs (queued as volume requests) and on any
// guest's VMI (its spec).
func hotplugOps() []opSpec {
	gen := func(pickTarget func(*rand.Rand) string) func(*rand.Rand) Op {
		return func(r *rand.Rand) Op { return Op{Target: pickTarget(r), N: r.IntN(hotplugVolumes)} }
	}
	vm := func(r *rand.Rand) string { return pick(r, "vm", poolVMs) }
	addOpts := func(n int) *virtkit.AddVolumeOptions {
		return &virtkit.AddVolumeOptions{Name: fmt.Sprintf("hp-%d", n),
			Disk: &virtkit.Disk{DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusSCSI}}},
			VolumeSource: &virtkit.HotplugVolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{
				ClaimName: fmt.Sprintf("hp-claim-%d", n)}}}
	}
	removeOpts := func(n int) *virtkit.RemoveVolumeOptions {
		return &virtkit.RemoveVolumeOptions{Name: fmt.Sprintf("hp-%d", n)}
	}
	vmKey := func(op Op) store.Key { return store.Key{Namespace: Namespace, Name: op.Target} }
	return []opSpec{
		{name: "add-volume", weight: 2, gen: gen(vm), run: func(ctx context.Context, s system, op Op) error {
			return actions.AddVMVolume(ctx, s.st(), vmKey(op), addOpts(op.N))
		}},
		{name: "remove-volume", weight: 2, gen: gen(vm), run: func(ctx context.Context, s system, op Op) error {
			return actions.RemoveVMVolume(ctx, s.st(), vmKey(op), removeOpts(op.N))
		}},
		{name: "add-vmi-volume", weight: 1, gen: gen(pickGuest), run: func(ctx context.Context, s system, op Op) error {
			return onGuest(func(ctx context.Context, st store.Store, key store.Key) error {
				return actions.AddVMIVolume(ctx, st, key, addOpts(op.N))
			})(ctx, s, op)
		}},
		{name: "remove-vmi-volume", weight: 1, gen: gen(pickGuest), run: func(ctx context.Context, s system, op Op) error {
			return onGuest(func(ctx context.Context, st store.Store, key store.Key) error {
				return actions.RemoveVMIVolume(ctx, st, key, removeOpts(op.N))
			})(ctx, s, op)
		}},
	}
}

// hotplugFinal checks InvHotplugVolumes on the in-process system (the
// multi-process one cannot read the hosts' domain XML).
func (c *checker) hotplugFinal(ctx context.Context, step int, vmis []virtkit.VirtualMachineInstance, out *[]Violation) error {
	h, ok := c.sys.(*Harness)
	if !ok {
		return nil
	}
	return h.eachSettledDomain(ctx, vmis, func(v *virtkit.VirtualMachineInstance, dom *libvirtxml.Domain) {
		var got []string
		if dom.Devices != nil {
			for j := range dom.Devices.Disks {
				if name, ok := domain.DiskName(&dom.Devices.Disks[j]); ok {
					got = append(got, name)
				}
			}
		}
		var want []string
		for _, d := range v.Spec.Domain.Devices.Disks {
			if slices.ContainsFunc(v.Spec.Volumes, func(vol virtkit.Volume) bool { return vol.Name == d.Name }) {
				want = append(want, d.Name)
			}
		}
		sort.Strings(got)
		sort.Strings(want)
		key := v.Namespace + "/" + v.Name
		if !slices.Equal(got, want) {
			c.report(out, step, InvHotplugVolumes, "VMI %s: domain on %s has disks %v, spec has %v", key, v.Status.NodeName, got, want)
		}
		for _, vol := range v.Spec.Volumes {
			if !vol.IsHotpluggable() {
				continue
			}
			phase := virtkit.VolumePhase("")
			for _, vs := range v.Status.VolumeStatus {
				if vs.Name == vol.Name {
					phase = vs.Phase
				}
			}
			if phase != virtkit.VolumeReady {
				c.report(out, step, InvHotplugVolumes, "VMI %s: hot-plugged volume %s is %q at quiescence", key, vol.Name, phase)
			}
		}
	})
}

// eachSettledDomain calls check with the domain XML of every running VMI
// that no migration is moving, as its node's hypervisor defines it. A VMI
// whose domain is missing is left to the ground-truth invariant.
func (h *Harness) eachSettledDomain(ctx context.Context, vmis []virtkit.VirtualMachineInstance,
	check func(*virtkit.VirtualMachineInstance, *libvirtxml.Domain)) error {
	for i := range vmis {
		v := &vmis[i]
		if v.Status.Phase != virtkit.Running || v.DeletionTimestamp != nil || h.Host(v.Status.NodeName) == nil {
			continue
		}
		if ms := v.Status.MigrationState; ms != nil && !ms.Completed && !ms.Failed {
			continue
		}
		x, err := h.Host(v.Status.NodeName).XML(ctx, v.Namespace+"_"+v.Name)
		if err != nil {
			continue
		}
		dom := &libvirtxml.Domain{}
		if err := dom.Unmarshal(x); err != nil {
			return err
		}
		check(v, dom)
	}
	return nil
}
