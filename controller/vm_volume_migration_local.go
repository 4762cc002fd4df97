package controller

// Volume migration from and to node-local storage. A claim on a node-local
// class is a file on one node: a VMI whose disk is such a claim is not
// live-migratable, except for the disks a volume migration copies
// (status.migratedVolumes), which cross to their destination claims with
// the guest over the migration link, as KubeVirt's block migration of the
// migrated volumes. A destination claim on node-local storage is bound on
// one node: the migration goes there.

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/scheduler"
	"github.com/virtkit/virtkit/store"
)

// errVolumeMigrationPlacement: a volume migration's destination claims
// leave no node the migration could go to.
var errVolumeMigrationPlacement = errors.New("volume migration cannot be placed")

// volumeMigrationNode returns the node the destination claims of vmi's
// volume migration pin its target to ("" when none is node-local). wait
// is a reason the destination is not ready to say yet (a DataVolume still
// importing); an error wrapping errVolumeMigrationPlacement is final.
func volumeMigrationNode(ctx context.Context, st store.Store, vmi *virtkit.VirtualMachineInstance) (node, wait string, err error) {
	by := ""
	for _, mv := range vmi.Status.MigratedVolumes {
		if mv.DestinationPVCInfo == nil {
			continue
		}
		name := mv.DestinationPVCInfo.ClaimName
		dv := &virtkit.DataVolume{}
		found, err := getOptional(ctx, st, store.Key{Namespace: vmi.Namespace, Name: name}, dv)
		if err != nil {
			return "", "", err
		}
		if !found {
			continue // a plain claim: virtkit's claims are seen by every node
		}
		if dv.Status.Phase != virtkit.DataVolumeSucceeded {
			return "", fmt.Sprintf("destination DataVolume %s is in phase %s", name, dv.Status.Phase), nil
		}
		n := dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]
		switch {
		case n == "":
		case n == vmi.Status.NodeName:
			return "", "", fmt.Errorf("%w: destination DataVolume %s lives on node-local storage of node %s, where the VMI runs; a migration needs another node",
				errVolumeMigrationPlacement, name, n)
		case node != "" && node != n:
			return "", "", fmt.Errorf("%w: destination DataVolumes %s and %s live on node-local storage of different nodes (%s, %s)",
				errVolumeMigrationPlacement, by, name, node, n)
		default:
			node, by = n, name
		}
	}
	return node, "", nil
}

// onlyMigratedDisksLocal reports whether every node-local disk of vmi is
// one its volume migration copies: then a LiveMigratable=False for
// DisksNotLiveMigratable, written by the node before the VMI listed its
// migrated volumes, does not apply to the volume migration.
func onlyMigratedDisksLocal(ctx context.Context, st store.Store, vmi *virtkit.VirtualMachineInstance) (bool, error) {
	if len(vmi.Status.MigratedVolumes) == 0 {
		return false, nil
	}
	for _, v := range vmi.Spec.Volumes {
		if virtkit.VolumeIsMigrated(vmi, v.Name) {
			continue
		}
		if v.HostDisk != nil && (v.HostDisk.Shared == nil || !*v.HostDisk.Shared) {
			return false, nil
		}
		name := claimOf(&v)
		if name == "" {
			continue
		}
		dv := &virtkit.DataVolume{}
		found, err := getOptional(ctx, st, store.Key{Namespace: vmi.Namespace, Name: name}, dv)
		if err != nil {
			return false, err
		}
		if found && dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation] != "" {
			return false, nil
		}
	}
	return true, nil
}

// isVolumeMigration reports whether the VM controller created mig for a
// volume migration.
func isVolumeMigration(mig *virtkit.VirtualMachineInstanceMigration) bool {
	return mig.Labels[virtkit.VolumesUpdateMigrationLabel] != ""
}

// volumeMigrationCandidates keeps, for a volume migration whose
// destination claims are on a node's local storage, only that node. A
// destination not ready yet, or a node that cannot take the VMI, leaves
// the migration unschedulable (it waits); destinations no other node
// can hold fail it.
func (r *MigrationReconciler) volumeMigrationCandidates(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration,
	vmi *virtkit.VirtualMachineInstance, candidates []virtkit.Node) ([]virtkit.Node, error) {
	if !isVolumeMigration(mig) || len(vmi.Status.MigratedVolumes) == 0 {
		return candidates, nil
	}
	node, wait, err := volumeMigrationNode(ctx, r.o.Store, vmi)
	switch {
	case err != nil:
		return nil, err
	case wait != "":
		return nil, fmt.Errorf("%w: %s", scheduler.ErrUnschedulable, wait)
	case node == "":
		return candidates, nil
	}
	for i := range candidates {
		if candidates[i].Name == node {
			return candidates[i : i+1], nil
		}
	}
	return nil, fmt.Errorf("%w: the destination claims live on node-local storage of node %s, which cannot take a migration now",
		scheduler.ErrUnschedulable, node)
}
