package simulation

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// volumeClaims is how many plain claims the migrate-volume op draws from;
// as many node-local DataVolumes follow them (N from volumeClaims on).
const volumeClaims = 2

// localVolumeSize is the size of the node-local DataVolumes migrate-volume
// creates.
const localVolumeSize = "1Mi"

// dataVolume is the volume the migrate-volume op adds and moves.
const dataVolume = "data"

// volumeMigrationOps are volume migration's operations: the user sets a
// pool VM's updateVolumesStrategy to Migration and points its data
// volume at one of the claims (adding the volume when the template has
// none: a change that needs a restart). From N = volumeClaims on the
// claim is a blank DataVolume on the node-local class, created by the op
// when missing: filled on one node, it takes the guest there (or, on the
// guest's own node, the volume migration fails and the VM waits for a
// restart).
func volumeMigrationOps() []opSpec {
	return []opSpec{
		{name: "migrate-volume", weight: 2,
			gen: func(r *rand.Rand) Op { return Op{Target: pick(r, "vm", poolVMs), N: r.IntN(2 * volumeClaims)} },
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
				src := virtkit.VolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{
					ClaimName: fmt.Sprintf("%s-data-%d", op.Target, op.N)}}
				if op.N >= volumeClaims {
					name := fmt.Sprintf("%s-local-%d", op.Target, op.N-volumeClaims)
					if err := ensureLocalDataVolume(ctx, s.st(), name); err != nil {
						return err
					}
					src = virtkit.VolumeSource{DataVolume: &virtkit.DataVolumeSource{Name: name}}
				}
				found := false
				for i := range spec.Volumes {
					if spec.Volumes[i].Name == dataVolume {
						spec.Volumes[i].VolumeSource = src
						found = true
					}
				}
				if !found {
					spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, virtkit.Disk{Name: dataVolume})
					spec.Volumes = append(spec.Volumes, virtkit.Volume{Name: dataVolume, VolumeSource: src})
				}
				return s.st().Update(ctx, vm)
			}},
	}
}

// ensureLocalDataVolume creates the blank node-local DataVolume name
// unless it exists.
func ensureLocalDataVolume(ctx context.Context, st store.Store, name string) error {
	dv := &virtkit.DataVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.CDISchemeGroupVersion.String(), Kind: virtkit.KindDataVolume},
		ObjectMeta: metav1.ObjectMeta{Namespace: Namespace, Name: name},
		Spec: virtkit.DataVolumeSpec{Source: &virtkit.DataVolumeImportSource{Blank: &virtkit.DataVolumeBlankImage{}},
			Storage: &virtkit.PersistentVolumeClaimSpec{Resources: virtkit.VolumeResourceRequirements{
				Requests: virtkit.ResourceList{virtkit.ResourceStorage: resource.MustParse(localVolumeSize)}}}},
	}
	if err := st.Create(ctx, dv); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
		return err
	}
	return nil
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
	if err := c.localDisksAway(ctx, step, vmis, out); err != nil {
		return err
	}
	h, ok := c.sys.(*Harness)
	if !ok {
		return nil
	}
	return h.eachSettledDomain(ctx, vmis, func(v *virtkit.VirtualMachineInstance, dom *libvirtxml.Domain) {
		for _, vol := range v.Spec.Volumes {
			claim := volumeClaim(&vol)
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

// claimsDiffer reports whether a template volume's claim (a
// persistentVolumeClaim's or a DataVolume's) differs from the running
// VMI's volume of the same name.
func claimsDiffer(tmpl, running []virtkit.Volume) bool {
	cur := map[string]string{}
	for i := range running {
		if c := volumeClaim(&running[i]); c != "" {
			cur[running[i].Name] = c
		}
	}
	for i := range tmpl {
		if old, ok := cur[tmpl[i].Name]; ok && volumeClaim(&tmpl[i]) != "" && volumeClaim(&tmpl[i]) != old {
			return true
		}
	}
	return false
}

// volumeClaim is the claim a volume names ("" for none).
func volumeClaim(v *virtkit.Volume) string {
	switch {
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	case v.DataVolume != nil:
		return v.DataVolume.Name
	}
	return ""
}

// localDisksAway reports a running VMI whose node-local DataVolume lives
// on another node than the one it runs on (a volume migration moved the
// guest without its disk, or the disk without its guest).
func (c *checker) localDisksAway(ctx context.Context, step int, vmis []virtkit.VirtualMachineInstance, out *[]Violation) error {
	for i := range vmis {
		v := &vmis[i]
		if v.Status.Phase != virtkit.Running || v.DeletionTimestamp != nil || v.Status.NodeName == "" ||
			(v.Status.MigrationState != nil && !v.Status.MigrationState.Completed) {
			continue
		}
		for j := range v.Spec.Volumes {
			name := volumeClaim(&v.Spec.Volumes[j])
			if name == "" {
				continue
			}
			dv := &virtkit.DataVolume{}
			if err := c.sys.st().Get(ctx, store.Key{Namespace: v.Namespace, Name: name}, dv); errors.Is(err, store.ErrNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if n := dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]; n != "" && n != v.Status.NodeName {
				c.report(out, step, InvVolumeMigration, "VMI %s/%s runs on node %s, its volume %s on DataVolume %s of node %s's local storage",
					v.Namespace, v.Name, v.Status.NodeName, v.Spec.Volumes[j].Name, name, n)
			}
		}
	}
	return nil
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
