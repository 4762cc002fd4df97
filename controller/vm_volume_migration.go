package controller

// Volume migration (updateVolumesStrategy: Migration). When the template
// of a running VM names new claims (PersistentVolumeClaim or DataVolume)
// for volumes the VMI runs with, the VM controller:
//
//  1. checks the volumes can be copied (not hot-plugged, not a filesystem,
//     a shareable disk or a LUN: else RestartRequired) and that the
//     destination claims exist (else VolumesChange=False on the VMI, and
//     the controller waits for them);
//  2. records the change in the VMI's status.migratedVolumes (source and
//     destination claim of each volume), sets VolumesChange=True, and
//     creates a VirtualMachineInstanceMigration labelled
//     kubevirt.io/volume-update-migration; the VM's
//     status.volumeUpdateState.volumeMigrationState lists the volumes;
//  3. the node agents run that migration with a storage copy of those
//     disks onto the destination claims;
//  4. when the migration succeeded, the VMI's spec.volumes point at the
//     destination claims and its status.migratedVolumes and VolumesChange
//     are cleared. When it failed, the VMI keeps its volumes,
//     VolumesChange=False (VolumeMigrationFailed) says why and the VM
//     gets RestartRequired: the new claims are used from the next start
//     (the same change is not tried again; a new template change is).
//     When the template goes back to the running claims (or on to others)
//     before the end, the migration is cancelled (deleted; the node agent
//     aborts it) and VolumesChange=False (VolumesChangeCancellation).
//
// Unlike KubeVirt, which writes the destination claims into the VMI's
// spec before the migration, the VMI's spec changes only once the data
// is on the new claims: a VMI's spec.volumes always name the claims its
// guest runs on.

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

const (
	// ReasonVolumeMigrationFailed is the RestartRequired reason of a VM
	// whose volume migration failed.
	ReasonVolumeMigrationFailed = "VolumeMigrationFailed"
	// ReasonVolumeMigrationInvalid is the RestartRequired reason of a VM
	// whose changed volumes a volume migration cannot copy.
	ReasonVolumeMigrationInvalid = "InvalidVolumesForMigration"
	// ReasonDestinationVolumeNotFound is the VolumesChange=False reason
	// while a destination claim does not exist.
	ReasonDestinationVolumeNotFound = "DestinationVolumeNotFound"
	// ReasonDestinationVolumeNotReady is the VolumesChange=False reason
	// while a destination DataVolume is not filled yet.
	ReasonDestinationVolumeNotReady = "DestinationVolumeNotReady"
	// ReasonVolumeMigrationInterrupted is the ManualRecoveryRequired
	// reason of a VM whose VMI ended during a volume migration: the
	// template names claims the guest never ran on.
	ReasonVolumeMigrationInterrupted = "VolumeMigrationInterrupted"

	// volumeMigrationUIDAnnotation and volumeMigrationDestinationsAnnotation
	// tie a volume migration to the VMI and the change it copies.
	volumeMigrationUIDAnnotation          = "virtkit.io/volume-migration-vmi-uid"
	volumeMigrationDestinationsAnnotation = "virtkit.io/volume-migration-destinations"

	destinationPoll = 5 * time.Second
)

// volumeChange is a template volume whose claim differs from the one the
// running VMI uses.
type volumeChange struct {
	name     string
	from, to string // claim names
	toDV     bool   // the destination is a DataVolume
}

// changedClaims lists the template volumes whose claim differs from the
// running VMI's volume of the same name (both claims), in template order.
func changedClaims(tmpl, running []virtkit.Volume) []volumeChange {
	cur := map[string]string{}
	for i := range running {
		if c := claimOf(&running[i]); c != "" {
			cur[running[i].Name] = c
		}
	}
	var out []volumeChange
	for i := range tmpl {
		to := claimOf(&tmpl[i])
		if from, ok := cur[tmpl[i].Name]; ok && to != "" && to != from {
			out = append(out, volumeChange{name: tmpl[i].Name, from: from, to: to, toDV: tmpl[i].DataVolume != nil})
		}
	}
	return out
}

// migrationStrategy reports whether vm asks for volume migration.
func migrationStrategy(vm *virtkit.VirtualMachine) bool {
	s := vm.Spec.UpdateVolumesStrategy
	return s != nil && *s == virtkit.UpdateVolumesStrategyMigration
}

// neutralizeMigratedClaims makes got's claims those of want for the
// volumes a volume migration moves, so that such a change alone is not a
// template change that needs a restart.
func neutralizeMigratedClaims(vm *virtkit.VirtualMachine, want, got *virtkit.VirtualMachineInstanceSpec) {
	if !migrationStrategy(vm) {
		return
	}
	changed := map[string]bool{}
	for _, c := range changedClaims(want.Volumes, got.Volumes) {
		changed[c.name] = true
	}
	for i := range got.Volumes {
		if !changed[got.Volumes[i].Name] {
			continue
		}
		for j := range want.Volumes {
			if want.Volumes[j].Name == got.Volumes[i].Name {
				got.Volumes[i].VolumeSource = *want.Volumes[j].VolumeSource.DeepCopy()
			}
		}
	}
}

// invalidForMigration names the changed volumes a volume migration
// cannot copy, as KubeVirt refuses them; "" when all can be copied.
func invalidForMigration(spec *virtkit.VirtualMachineInstanceSpec, changes []volumeChange) string {
	var hot, fs, shared, luns []string
	vols := map[string]*virtkit.Volume{}
	for i := range spec.Volumes {
		vols[spec.Volumes[i].Name] = &spec.Volumes[i]
	}
	isFS := map[string]bool{}
	for _, f := range spec.Domain.Devices.Filesystems {
		isFS[f.Name] = true
	}
	disks := map[string]*virtkit.Disk{}
	for i := range spec.Domain.Devices.Disks {
		disks[spec.Domain.Devices.Disks[i].Name] = &spec.Domain.Devices.Disks[i]
	}
	for _, c := range changes {
		v := vols[c.name]
		switch {
		case v != nil && (v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.Hotpluggable ||
			v.DataVolume != nil && v.DataVolume.Hotpluggable):
			hot = append(hot, c.name)
		case isFS[c.name]:
			fs = append(fs, c.name)
		case disks[c.name] != nil && disks[c.name].Shareable != nil && *disks[c.name].Shareable:
			shared = append(shared, c.name)
		case disks[c.name] != nil && disks[c.name].LUN != nil:
			luns = append(luns, c.name)
		}
	}
	var parts []string
	for _, p := range []struct {
		what string
		l    []string
	}{{"hot-plugged", hot}, {"filesystems", fs}, {"shareable disks", shared}, {"LUNs", luns}} {
		if len(p.l) > 0 {
			parts = append(parts, p.what+" "+strings.Join(p.l, ", "))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "spec.template.spec.volumes: a volume migration cannot copy these volumes: " + strings.Join(parts, "; ") +
		"; they are used after a restart"
}

// migratedVolumes turns changes into the VMI's status.migratedVolumes.
func migratedVolumes(changes []volumeChange) []virtkit.StorageMigratedVolumeInfo {
	out := make([]virtkit.StorageMigratedVolumeInfo, 0, len(changes))
	for _, c := range changes {
		out = append(out, virtkit.StorageMigratedVolumeInfo{VolumeName: c.name,
			SourcePVCInfo:      &virtkit.PersistentVolumeClaimInfo{ClaimName: c.from},
			DestinationPVCInfo: &virtkit.PersistentVolumeClaimInfo{ClaimName: c.to}})
	}
	return out
}

// destinations is a stable text of the volume/destination pairs.
func destinations(mv []virtkit.StorageMigratedVolumeInfo) string {
	var parts []string
	for _, v := range mv {
		to := ""
		if v.DestinationPVCInfo != nil {
			to = v.DestinationPVCInfo.ClaimName
		}
		parts = append(parts, v.VolumeName+"="+to)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// volumeMigrationName names the migration of one change of one VMI.
func volumeMigrationName(vmi *virtkit.VirtualMachineInstance, dest string, generation int64) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%d", vmi.UID, dest, generation)
	return fmt.Sprintf("%s-volume-migration-%08x", vmi.Name, h.Sum32())
}

// syncVolumeMigration drives the VM's volume migration (see the file
// comment). It runs after syncLiveUpdate and may set s.restartRequired.
func (r *VMReconciler) syncVolumeMigration(ctx context.Context, s *vmSync) error {
	vm, vmi := s.vm, s.vmi
	st := &vm.Status
	if vmi == nil || vmi.IsFinal() || vmi.DeletionTimestamp != nil || s.deletedVMI || vm.Spec.Template == nil {
		r.interruptedVolumeMigration(s)
		return nil
	}
	virtkit.RemoveCondition(&st.Conditions, virtkit.VirtualMachineManualRecoveryRequired)
	if len(vmi.Status.MigratedVolumes) > 0 {
		return r.followVolumeMigration(ctx, s)
	}
	changes := changedClaims(vm.Spec.Template.Spec.Volumes, vmi.Spec.Volumes)
	vc := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange)
	if len(changes) == 0 || !migrationStrategy(vm) {
		// A cancellation stays on record; a failure or a missing
		// destination no longer applies.
		if vc != nil && vc.Reason != virtkit.VolumesChangeCancellationReason {
			if err := r.setVolumesChange(ctx, s, nil, nil); err != nil {
				return err
			}
		}
		if ms := volumeMigrationState(st); ms != nil && destinations(ms.MigratedVolumes) != destinations(migratedVolumes(currentClaims(vmi, ms.MigratedVolumes))) {
			st.VolumeUpdateState = nil // neither in flight nor what the VMI runs on
		}
		return nil
	}
	if s.restartRequired != "" {
		return nil // other changes need a restart anyway
	}
	if msg := invalidForMigration(&vm.Spec.Template.Spec, changes); msg != "" {
		s.restartRequired, s.restartReason = msg, ReasonVolumeMigrationInvalid
		return nil
	}
	mv := migratedVolumes(changes)
	if vc != nil && vc.Status == virtkit.ConditionFalse && vc.Reason == virtkit.VolumeMigrationFailedReason {
		if ms := volumeMigrationState(st); ms != nil && destinations(ms.MigratedVolumes) == destinations(mv) {
			s.restartRequired, s.restartReason = vc.Message, ReasonVolumeMigrationFailed
			return nil // this change failed: it waits for a restart
		}
	}
	for _, c := range changes {
		if reason, msg, err := r.destinationNotReady(ctx, vm.Namespace, c); err != nil {
			return err
		} else if reason != "" {
			s.requeueSoon(destinationPoll)
			return r.setVolumesChange(ctx, s, &virtkit.Condition{Type: virtkit.VirtualMachineInstanceVolumesChange,
				Status: virtkit.ConditionFalse, Reason: reason, Message: msg}, nil)
		}
	}
	if migrating(s) {
		s.requeueSoon(hotplugPoll) // another migration is in flight
		return nil
	}
	return r.startVolumeMigration(ctx, s, mv)
}

// volumeMigrationState is the VM's recorded volume migration, or nil.
func volumeMigrationState(st *virtkit.VirtualMachineStatus) *virtkit.VolumeMigrationState {
	if st.VolumeUpdateState == nil {
		return nil
	}
	return st.VolumeUpdateState.VolumeMigrationState
}

// currentClaims gives, for each volume of mv, the claim the VMI uses now
// as its destination.
func currentClaims(vmi *virtkit.VirtualMachineInstance, mv []virtkit.StorageMigratedVolumeInfo) []volumeChange {
	var out []volumeChange
	for _, m := range mv {
		for i := range vmi.Spec.Volumes {
			if vmi.Spec.Volumes[i].Name == m.VolumeName {
				out = append(out, volumeChange{name: m.VolumeName, to: claimOf(&vmi.Spec.Volumes[i])})
			}
		}
	}
	return out
}

// destinationNotReady gives the reason a DataVolume destination cannot be
// copied to yet: it does not exist, or it is not filled (a node-local one
// is bound to its node only then). virtkit's store holds no
// PersistentVolumeClaims: a missing claim fails the migration on the node
// instead.
func (r *VMReconciler) destinationNotReady(ctx context.Context, namespace string, c volumeChange) (reason, msg string, err error) {
	dv := &virtkit.DataVolume{}
	found, err := getOptional(ctx, r.o.Store, store.Key{Namespace: namespace, Name: c.to}, dv)
	switch {
	case err != nil:
		return "", "", err
	case !found && !c.toDV:
		return "", "", nil // a plain claim (or one a DataVolume of its name fills)
	case !found:
		return ReasonDestinationVolumeNotFound, fmt.Sprintf("volume %s: destination DataVolume %s does not exist", c.name, c.to), nil
	case dv.Status.Phase != virtkit.DataVolumeSucceeded:
		return ReasonDestinationVolumeNotReady, fmt.Sprintf("volume %s: destination DataVolume %s is in phase %q", c.name, c.to, dv.Status.Phase), nil
	}
	return "", "", nil
}

// startVolumeMigration records the change on the VMI and creates its
// migration.
func (r *VMReconciler) startVolumeMigration(ctx context.Context, s *vmSync, mv []virtkit.StorageMigratedVolumeInfo) error {
	vm, vmi := s.vm, s.vmi
	dest := destinations(mv)
	mig := &virtkit.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: vmi.Namespace, Name: volumeMigrationName(vmi, dest, vm.Generation),
			Labels: map[string]string{virtkit.VolumesUpdateMigrationLabel: vmi.Name},
			Annotations: map[string]string{volumeMigrationUIDAnnotation: string(vmi.UID),
				volumeMigrationDestinationsAnnotation: dest},
		},
		Spec: virtkit.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name},
	}
	if err := r.setVolumesChange(ctx, s, &virtkit.Condition{Type: virtkit.VirtualMachineInstanceVolumesChange,
		Status: virtkit.ConditionTrue}, mv); err != nil {
		return err
	}
	if err := r.o.Store.Create(ctx, mig); err != nil && !errors.Is(err, store.ErrAlreadyExists) {
		return err
	}
	vm.Status.VolumeUpdateState = &virtkit.VolumeUpdateState{VolumeMigrationState: &virtkit.VolumeMigrationState{
		MigratedVolumes: mv}}
	r.o.Logger.Info("volume migration started", "vmi", vmi.Namespace+"/"+vmi.Name, "migration", mig.Name, "volumes", dest)
	return nil
}

// volumeMigrationOf finds the migration of vmi's recorded change: the
// newest one not being deleted, or nil.
func (r *VMReconciler) volumeMigrationOf(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (*virtkit.VirtualMachineInstanceMigration, error) {
	migs := &virtkit.VirtualMachineInstanceMigrationList{}
	if err := r.o.Store.List(ctx, migs, store.ListOptions{Namespace: vmi.Namespace,
		LabelSelector: labels.SelectorFromSet(labels.Set{virtkit.VolumesUpdateMigrationLabel: vmi.Name})}); err != nil {
		return nil, err
	}
	dest := destinations(vmi.Status.MigratedVolumes)
	var best *virtkit.VirtualMachineInstanceMigration
	for i := range migs.Items {
		m := &migs.Items[i]
		if m.Annotations[volumeMigrationUIDAnnotation] != string(vmi.UID) || m.Annotations[volumeMigrationDestinationsAnnotation] != dest {
			continue
		}
		if best == nil || best.CreationTimestamp.Before(&m.CreationTimestamp) ||
			best.CreationTimestamp.Equal(&m.CreationTimestamp) && best.Name < m.Name {
			best = m
		}
	}
	return best, nil
}

// followVolumeMigration watches the VMI's volume migration to its end,
// and cancels it when the template no longer asks for it.
func (r *VMReconciler) followVolumeMigration(ctx context.Context, s *vmSync) error {
	vm, vmi := s.vm, s.vmi
	mig, err := r.volumeMigrationOf(ctx, vmi)
	if err != nil {
		return err
	}
	wanted := migrationStrategy(vm) &&
		destinations(migratedVolumes(changedClaims(vm.Spec.Template.Spec.Volumes, vmi.Spec.Volumes))) == destinations(vmi.Status.MigratedVolumes)
	switch {
	case mig != nil && mig.Status.Phase == virtkit.MigrationSucceeded:
		return r.finishVolumeMigration(ctx, s)
	case mig != nil && mig.Status.Phase == virtkit.MigrationFailed:
		reason, msg := virtkit.VolumeMigrationFailedReason, "volume migration "+mig.Name+" failed"
		if ms := mig.Status.MigrationState; ms != nil && ms.FailureReason != "" {
			msg += ": " + ms.FailureReason
		}
		if !wanted {
			reason, msg = virtkit.VolumesChangeCancellationReason, "the template no longer asks for the volume migration"
			vm.Status.VolumeUpdateState = nil
		} else {
			s.restartRequired, s.restartReason = msg, ReasonVolumeMigrationFailed
		}
		return r.setVolumesChange(ctx, s, &virtkit.Condition{Type: virtkit.VirtualMachineInstanceVolumesChange,
			Status: virtkit.ConditionFalse, Reason: reason, Message: msg}, nil)
	case mig == nil && !wanted:
		vm.Status.VolumeUpdateState = nil
		return r.setVolumesChange(ctx, s, &virtkit.Condition{Type: virtkit.VirtualMachineInstanceVolumesChange,
			Status: virtkit.ConditionFalse, Reason: virtkit.VolumesChangeCancellationReason,
			Message: "the template no longer asks for the volume migration"}, nil)
	case mig == nil:
		// Recorded but not created (a lost write): create it again.
		return r.startVolumeMigration(ctx, s, vmi.Status.MigratedVolumes)
	case !wanted && mig.DeletionTimestamp == nil:
		// Cancel: the migration reconciler fails a migration deleted
		// before its hand-off and has the source abort one after it.
		r.o.Logger.Info("volume migration cancelled", "vmi", vmi.Namespace+"/"+vmi.Name, "migration", mig.Name)
		if err := r.o.Store.Delete(ctx, mig, store.DeleteOptions{}); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	s.requeueSoon(hotplugPoll)
	return nil
}

// finishVolumeMigration points the VMI's volumes at the claims the data
// was copied to and clears the change.
func (r *VMReconciler) finishVolumeMigration(ctx context.Context, s *vmSync) error {
	vm, vmi := s.vm, s.vmi.DeepCopy()
	tmpl := map[string]*virtkit.Volume{}
	for i := range vm.Spec.Template.Spec.Volumes {
		tmpl[vm.Spec.Template.Spec.Volumes[i].Name] = &vm.Spec.Template.Spec.Volumes[i]
	}
	changed := false
	for _, mv := range vmi.Status.MigratedVolumes {
		to := mv.DestinationPVCInfo.ClaimName
		for i := range vmi.Spec.Volumes {
			v := &vmi.Spec.Volumes[i]
			if v.Name != mv.VolumeName || claimOf(v) == to {
				continue
			}
			changed = true
			if t := tmpl[v.Name]; t != nil && claimOf(t) == to {
				v.VolumeSource = *t.VolumeSource.DeepCopy()
			} else if v.DataVolume != nil {
				v.DataVolume.Name = to
			} else {
				v.PersistentVolumeClaim.ClaimName = to
			}
		}
	}
	if changed {
		if err := r.o.Store.Update(ctx, vmi); err != nil {
			return err
		}
		s.vmi = vmi
	}
	r.o.Logger.Info("volume migration succeeded", "vmi", vmi.Namespace+"/"+vmi.Name, "volumes", destinations(vmi.Status.MigratedVolumes))
	return r.setVolumesChange(ctx, s, nil, nil)
}

// setVolumesChange writes the VMI's VolumesChange condition (removed when
// cond is nil) and status.migratedVolumes.
func (r *VMReconciler) setVolumesChange(ctx context.Context, s *vmSync, cond *virtkit.Condition, mv []virtkit.StorageMigratedVolumeInfo) error {
	cur := virtkit.GetCondition(s.vmi.Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange)
	same := cond == nil && cur == nil ||
		cond != nil && cur != nil && cur.Status == cond.Status && cur.Reason == cond.Reason && cur.Message == cond.Message
	if same && equality.Semantic.DeepEqual(s.vmi.Status.MigratedVolumes, mv) {
		return nil
	}
	vmi := s.vmi.DeepCopy()
	if cond == nil {
		virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstanceVolumesChange)
	} else {
		virtkit.SetCondition(&vmi.Status.Conditions, *cond, s.now)
	}
	vmi.Status.MigratedVolumes = mv
	if err := r.o.Store.UpdateStatus(ctx, vmi); err != nil {
		return err
	}
	s.vmi = vmi
	return nil
}

// interruptedVolumeMigration marks a VM whose VMI ended during a volume
// migration: its template names claims its guest never ran on.
func (r *VMReconciler) interruptedVolumeMigration(s *vmSync) {
	st := &s.vm.Status
	ms := volumeMigrationState(st)
	if ms == nil {
		return
	}
	if !migrationStrategy(s.vm) || s.vm.Spec.Template == nil {
		st.VolumeUpdateState = nil
		virtkit.RemoveCondition(&st.Conditions, virtkit.VirtualMachineManualRecoveryRequired)
		return
	}
	back := true // the template is back on the source claims
	for _, m := range ms.MigratedVolumes {
		for i := range s.vm.Spec.Template.Spec.Volumes {
			v := &s.vm.Spec.Template.Spec.Volumes[i]
			if v.Name == m.VolumeName && m.SourcePVCInfo != nil && claimOf(v) != m.SourcePVCInfo.ClaimName {
				back = false
			}
		}
	}
	if back {
		st.VolumeUpdateState = nil
		virtkit.RemoveCondition(&st.Conditions, virtkit.VirtualMachineManualRecoveryRequired)
		return
	}
	if c := virtkit.GetCondition(st.Conditions, virtkit.VirtualMachineInstanceVolumesChange); c == nil || c.Status != virtkit.ConditionTrue {
		return // no migration was in flight
	}
	virtkit.SetCondition(&st.Conditions, virtkit.Condition{Type: virtkit.VirtualMachineManualRecoveryRequired,
		Status: virtkit.ConditionTrue, Reason: ReasonVolumeMigrationInterrupted,
		Message: "the VMI ended during the volume migration of " + destinations(ms.MigratedVolumes) +
			": check the data of the destination claims, or set the template back to the source claims"}, s.now)
}

// volumeMigrationVM maps a volume migration to its VM.
func volumeMigrationVM(_ context.Context, obj virtkit.Object) []reconcile.Request {
	name := obj.GetLabels()[virtkit.VolumesUpdateMigrationLabel]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{Namespace: obj.GetNamespace(), Name: name}}
}
