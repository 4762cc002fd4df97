package simulation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// InvVolumeMigration: at quiescence no volume migration is in flight (a
// VMI's status.migratedVolumes is empty), a running guest's disks are on
// the claims its VMI's spec.volumes name (a volume migration moves both
// or neither), and a VM whose template names other claims than its
// running VMI says why (RestartRequired, or VolumesChange=False on the
// VMI).
const InvVolumeMigration = "volume-migration"

// volumeClaims is how many claims the migrate-volume op draws from.
const volumeClaims = 2

// dataVolume is the volume the migrate-volume op adds and moves.
const dataVolume = "data"

// volumeMigrationOps are volume migration's operations: the user sets a
// pool VM's updateVolumesStrategy to Migration and points its data
// volume at one of the claims (adding the volume when the template has
// none: a change that needs a restart).
func volumeMigrationOps() []opSpec {
	return []opSpec{
		{name: "migrate-volume", weight: 2,
			gen: func(r *rand.Rand) Op { return Op{Target: pick(r, "vm", poolVMs), N: r.IntN(volumeClaims)} },
			run: func(ctx context.Context, s system, op Op) error {
				vm := &virtkit.VirtualMachine{}
				if err := s.st().Get(ctx, store.Key{Namespace: Namespace, Name: op.Target}, vm); err != nil {
					return err
				}
				if vm.Spec.Template == nil {
					return nil
				}
				strategy := virtkit.UpdateVolumesStrategyMigration
				vm.Spec.UpdateVolumesStrategy = &strategy
				spec := &vm.Spec.Template.Spec
				claim := fmt.Sprintf("%s-data-%d", op.Target, op.N)
				found := false
				for i := range spec.Volumes {
					if spec.Volumes[i].Name == dataVolume {
						spec.Volumes[i].VolumeSource = virtkit.VolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
						found = true
					}
				}
				if !found {
					spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, virtkit.Disk{Name: dataVolume})
					spec.Volumes = append(spec.Volumes, virtkit.Volume{Name: dataVolume, VolumeSource: virtkit.VolumeSource{
						PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
				}
				return s.st().Update(ctx, vm)
			}},
	}
}

// volumeMigrationFinal checks InvVolumeMigration. The disks' ground truth
// needs the in-process system's hosts.
func (c *checker) volumeMigrationFinal(ctx context.Context, step int, vms []virtkit.VirtualMachine, vmis []virtkit.VirtualMachineInstance, out *[]Violation) error {
	byName := map[string]*virtkit.VirtualMachineInstance{}
	for i := range vmis {
		v := &vmis[i]
		key := v.Namespace + "/" + v.Name
		byName[key] = v
		if len(v.Status.MigratedVolumes) > 0 && v.Status.Phase == virtkit.Running && v.DeletionTimestamp == nil {
			c.report(out, step, InvVolumeMigration, "VMI %s: volume migration of %v still in flight at quiescence", key, v.Status.MigratedVolumes)
		}
	}
	for i := range vms {
		vm := &vms[i]
		v := byName[vm.Namespace+"/"+vm.Name]
		if vm.Spec.Template == nil || v == nil || v.Status.Phase != virtkit.Running || v.DeletionTimestamp != nil ||
			vm.DeletionTimestamp != nil || !metaOwnedBy(v, vm) {
			continue
		}
		if !claimsDiffer(vm.Spec.Template.Spec.Volumes, v.Spec.Volumes) {
			continue
		}
		restart := virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineRestartRequired)
		change := virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange)
		if (restart == nil || restart.Status != virtkit.ConditionTrue) && (change == nil || change.Status != virtkit.ConditionFalse) {
			c.report(out, step, InvVolumeMigration, "VM %s/%s: template claims differ from the running VMI's and nothing says why", vm.Namespace, vm.Name)
		}
	}
	h, ok := c.sys.(*Harness)
	if !ok {
		return nil
	}
	return h.eachSettledDomain(ctx, vmis, func(v *virtkit.VirtualMachineInstance, dom *libvirtxml.Domain) {
		for _, vol := range v.Spec.Volumes {
			claim := ""
			if vol.PersistentVolumeClaim != nil {
				claim = vol.PersistentVolumeClaim.ClaimName
			}
			if claim == "" || vol.IsHotpluggable() {
				continue
			}
			if got := diskFile(dom, vol.Name); got != "" && strings.TrimSuffix(filepath.Base(got), ".img") != claim {
				c.report(out, step, InvVolumeMigration, "VMI %s/%s: volume %s names claim %s, its disk on %s is %s",
					v.Namespace, v.Name, vol.Name, claim, v.Status.NodeName, got)
			}
		}
	})
}

// claimsDiffer reports whether a template volume's claim differs from the
// running VMI's volume of the same name.
func claimsDiffer(tmpl, running []virtkit.Volume) bool {
	cur := map[string]string{}
	for _, v := range running {
		if v.PersistentVolumeClaim != nil {
			cur[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	for _, v := range tmpl {
		if old, ok := cur[v.Name]; ok && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName != old {
			return true
		}
	}
	return false
}

// metaOwnedBy reports whether vm controls vmi (the same UID chain).
func metaOwnedBy(vmi *virtkit.VirtualMachineInstance, vm *virtkit.VirtualMachine) bool {
	for _, ref := range vmi.OwnerReferences {
		if ref.UID == vm.UID {
			return true
		}
	}
	return false
}

// diskFile is the source file of the disk of volume name ("" if none).
func diskFile(dom *libvirtxml.Domain, name string) string {
	if dom.Devices == nil {
		return ""
	}
	for _, d := range dom.Devices.Disks {
		if d.Alias != nil && d.Alias.Name == "ua-"+name && d.Source != nil && d.Source.File != nil {
			return d.Source.File.File
		}
	}
	return ""
}
