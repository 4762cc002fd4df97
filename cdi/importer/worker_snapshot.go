package importer

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/storage"
	"github.com/virtkit/virtkit/store"
)

// volumeSnapshotPath finds the file of the volume snapshot a DataVolume's
// spec.source.snapshot names: the VirtualMachineSnapshotContent that
// recorded it says which claim it copied, on which storage class and
// node; the snapshot lies next to that claim's disk.
func (w *Worker) volumeSnapshotPath(ctx context.Context, dv *virtkit.DataVolume) (string, error) {
	src := dv.Spec.Source.Snapshot
	ns := src.Namespace
	if ns == "" {
		ns = dv.Namespace
	}
	if ns != dv.Namespace {
		err := fmt.Errorf("%w: spec.source.snapshot.namespace: a volume snapshot in another namespace (%s) is not supported", ErrBadSource, ns)
		return "", public(err, "%s", err.Error())
	}
	var contents virtkit.VirtualMachineSnapshotContentList
	if err := w.opts.Store.List(ctx, &contents, store.ListOptions{Namespace: ns}); err != nil {
		return "", fmt.Errorf("volume snapshot %s/%s: %w", ns, src.Name, err)
	}
	ref, ok := virtkit.FindVolumeSnapshot(contents.Items, src.Name)
	if !ok || !ref.Ready {
		err := fmt.Errorf("volume snapshot %s/%s is not ready", ns, src.Name)
		if !ok {
			err = fmt.Errorf("%s", virtkit.MessageCloneWithoutSource("snapshot", src.Name))
		}
		return "", public(err, "%s", err.Error())
	}
	claim := ref.Backup.PersistentVolumeClaim
	class, err := w.opts.Classes.Get(claim.Annotations[virtkit.DataVolumeStorageClassAnnotation])
	if err != nil {
		return "", err
	}
	node := claim.Annotations[virtkit.DataVolumeVolumeNodeAnnotation]
	if node != "" && node != w.opts.NodeName && !class.Shared() {
		err := fmt.Errorf("volume snapshot %s/%s lives on node %s, not %s", ns, src.Name, node, w.opts.NodeName)
		return "", public(err, "volume snapshot %s/%s lives on another node", ns, src.Name)
	}
	return storage.VolumeSnapshotPath(class.Path(w.opts.NodeName, ns, claim.Name), src.Name), nil
}
