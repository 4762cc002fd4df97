package cluster

import (
	"context"
	"errors"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// clusterDiskCopier implements cdi.InUseCopier: a volume that a VMI of
// the cluster uses is copied by the hypervisor of the node running it
// (hypervisor.DiskBackuper: libvirt's point-in-time backup), so the
// snapshot of a running VM's disk is never a torn file copy.
type clusterDiskCopier struct{ c *Cluster }

// CopyInUse implements cdi.InUseCopier. A VMI whose domain is not
// running (not started yet, stopped) does not write the file: it is left
// to the plain copy. So is every volume on a hypervisor that is not a
// DiskBackuper (the simulator: nothing writes its disk files behind
// virtkit's back).
func (d clusterDiskCopier) CopyInUse(ctx context.Context, vol storage.SnapshotVolume, src, dst string) (bool, error) {
	var vmis virtkit.VirtualMachineInstanceList
	if err := d.c.store.List(ctx, &vmis, store.ListOptions{Namespace: vol.Namespace}); err != nil {
		return false, err
	}
	for i := range vmis.Items {
		vmi := &vmis.Items[i]
		if vmi.Status.NodeName == "" || !usesClaim(vmi, vol.Name) {
			continue
		}
		n := d.c.Node(vmi.Status.NodeName)
		if n == nil {
			continue
		}
		b, ok := n.Hypervisor.(hypervisor.DiskBackuper)
		if !ok {
			continue
		}
		err := b.BackupDisk(ctx, node.DomainName(vmi.Namespace, vmi.Name), src, dst)
		if errors.Is(err, hypervisor.ErrNotFound) || errors.Is(err, hypervisor.ErrInvalidState) {
			continue // no running guest: nothing writes the file
		}
		return true, err
	}
	return false, nil
}

// usesClaim reports whether one of the VMI's volumes is the DataVolume or
// claim name.
func usesClaim(vmi *virtkit.VirtualMachineInstance, name string) bool {
	for _, v := range vmi.Spec.Volumes {
		if v.DataVolume != nil && v.DataVolume.Name == name ||
			v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
			return true
		}
	}
	return false
}
