package controller

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// source resolves an export's source into the volumes to serve and
// whether they can be served now.
func (r *ExportReconciler) source(ctx context.Context, exp *virtkit.VirtualMachineExport) (*exportSource, error) {
	switch exp.Spec.Source.Kind {
	case virtkit.KindVirtualMachine:
		return r.vmSource(ctx, exp)
	case virtkit.KindVirtualMachineSnapshot:
		return r.snapshotSource(ctx, exp)
	case "PersistentVolumeClaim":
		return r.claimSource(ctx, exp)
	}
	return &exportSource{notFound: true,
		message: fmt.Sprintf("source kind %q is not supported", exp.Spec.Source.Kind)}, nil
}

// dataVolumeOf returns the DataVolume holding claim's data, or nil.
func (r *ExportReconciler) dataVolumeOf(ctx context.Context, namespace, claim string) (*virtkit.DataVolume, error) {
	dv := &virtkit.DataVolume{}
	ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: namespace, Name: claim}, dv)
	if err != nil || !ok {
		return nil, err
	}
	return dv, nil
}

func volumeOfDataVolume(name string, dv *virtkit.DataVolume) exportVolume {
	return exportVolume{name: name, volume: SnapshotVolume{Namespace: dv.Namespace, Name: dv.Name,
		StorageClass: dv.Annotations[virtkit.DataVolumeStorageClassAnnotation],
		Node:         dv.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]}}
}

// vmSource: the VM's DataVolume-backed volumes, available while no VMI of
// the VM runs and every DataVolume has its data.
func (r *ExportReconciler) vmSource(ctx context.Context, exp *virtkit.VirtualMachineExport) (*exportSource, error) {
	name := exp.Spec.Source.Name
	src := &exportSource{vmName: &name, populated: true}
	vm := &virtkit.VirtualMachine{}
	ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: exp.Namespace, Name: name}, vm)
	if err != nil {
		return nil, err
	}
	if !ok {
		src.notFound, src.populated = true, false
		src.message = fmt.Sprintf("Virtual Machine %s/%s not found", exp.Namespace, name)
		return src, nil
	}
	if vm.Spec.Template != nil {
		for _, v := range vm.Spec.Template.Spec.Volumes {
			claim := claimOf(&v)
			if claim == "" {
				continue
			}
			dv, err := r.dataVolumeOf(ctx, exp.Namespace, claim)
			if err != nil {
				return nil, err
			}
			if dv == nil {
				if v.DataVolume != nil || hasTemplate(vm, claim) {
					// Still to be made from its template.
					src.populated = false
				}
				continue
			}
			src.claims = append(src.claims, dv)
			src.volumes = append(src.volumes, volumeOfDataVolume(dv.Name, dv))
			if dv.Status.Phase != virtkit.DataVolumeSucceeded {
				src.populated = false
			}
		}
	}
	if len(src.volumes) > 0 && !src.populated {
		src.message = fmt.Sprintf("Not all volumes in the Virtual Machine %s/%s are populated", exp.Namespace, name)
		return src, nil
	}
	vmi := &virtkit.VirtualMachineInstance{}
	ok, err = getOptional(ctx, r.o.Store, store.Key{Namespace: exp.Namespace, Name: name}, vmi)
	if err != nil {
		return nil, err
	}
	if ok && vmi.Status.Phase != virtkit.Succeeded && vmi.Status.Phase != virtkit.Failed {
		src.inUse = true
		src.message = fmt.Sprintf("Virtual Machine %s/%s is running", exp.Namespace, name)
	}
	return src, nil
}

// claimSource: one DataVolume's claim, available once it has its data and
// while no running VMI uses it.
func (r *ExportReconciler) claimSource(ctx context.Context, exp *virtkit.VirtualMachineExport) (*exportSource, error) {
	name := exp.Spec.Source.Name
	dv, err := r.dataVolumeOf(ctx, exp.Namespace, name)
	if err != nil {
		return nil, err
	}
	if dv == nil {
		return &exportSource{notFound: true,
			message: fmt.Sprintf("PersistentVolumeClaim %s/%s not found", exp.Namespace, name)}, nil
	}
	src := &exportSource{claims: []*virtkit.DataVolume{dv}, volumes: []exportVolume{volumeOfDataVolume(dv.Name, dv)},
		populated: dv.Status.Phase == virtkit.DataVolumeSucceeded}
	if !src.populated {
		src.message = fmt.Sprintf("pvc %s/%s is not populated", exp.Namespace, name)
		return src, nil
	}
	var vmis virtkit.VirtualMachineInstanceList
	if err := r.o.Store.List(ctx, &vmis, store.ListOptions{Namespace: exp.Namespace}); err != nil {
		return nil, err
	}
	for i := range vmis.Items {
		vmi := &vmis.Items[i]
		if vmi.Status.Phase == virtkit.Succeeded || vmi.Status.Phase == virtkit.Failed {
			continue
		}
		for _, v := range vmi.Spec.Volumes {
			if claimOf(&v) == name {
				src.inUse = true
				src.message = fmt.Sprintf("pvc %s/%s is in use", exp.Namespace, name)
				return src, nil
			}
		}
	}
	return src, nil
}

// snapshotSource: the volume snapshots of a ready VirtualMachineSnapshot,
// served from the snapshots' own files (no claim is made from them).
func (r *ExportReconciler) snapshotSource(ctx context.Context, exp *virtkit.VirtualMachineExport) (*exportSource, error) {
	name := exp.Spec.Source.Name
	src := &exportSource{snapshot: true}
	snap := &virtkit.VirtualMachineSnapshot{}
	ok, err := getOptional(ctx, r.o.Store, store.Key{Namespace: exp.Namespace, Name: name}, snap)
	if err != nil {
		return nil, err
	}
	if !ok {
		src.notFound = true
		src.message = fmt.Sprintf("VirtualMachineSnapshot %s/%s does not exist", exp.Namespace, name)
		return src, nil
	}
	vmName := snap.Spec.Source.Name
	src.vmName = &vmName
	if snap.Status == nil || snap.Status.ReadyToUse == nil || !*snap.Status.ReadyToUse || snap.Status.VirtualMachineSnapshotContentName == nil {
		src.message = fmt.Sprintf("VirtualMachineSnapshot %s/%s is not ready to use", exp.Namespace, name)
		return src, nil
	}
	content := &virtkit.VirtualMachineSnapshotContent{}
	ok, err = getOptional(ctx, r.o.Store, store.Key{Namespace: exp.Namespace, Name: *snap.Status.VirtualMachineSnapshotContentName}, content)
	if err != nil {
		return nil, err
	}
	if !ok {
		src.notFound = true
		src.message = fmt.Sprintf("VirtualMachineSnapshotContent %s/%s not found", exp.Namespace, *snap.Status.VirtualMachineSnapshotContentName)
		return src, nil
	}
	src.content = true
	for i := range content.Spec.VolumeBackups {
		b := &content.Spec.VolumeBackups[i]
		if b.VolumeSnapshotName == nil {
			continue
		}
		src.volumes = append(src.volumes, exportVolume{name: b.PersistentVolumeClaim.Name,
			volume: backupVolume(exp.Namespace, b), snapshot: *b.VolumeSnapshotName})
	}
	src.populated = true
	if len(src.volumes) == 0 {
		src.populated = false
		src.message = fmt.Sprintf("VirtualMachineSnapshot %s/%s does not contain any volume snapshots", exp.Namespace, name)
	}
	return src, nil
}
