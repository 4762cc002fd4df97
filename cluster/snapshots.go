package cluster

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// Controller names of the snapshot machinery.
const (
	SnapshotController        = "snapshot"
	SnapshotContentController = "snapshotcontent"
	RestoreController         = "restore"
	CloneController           = "clone"
)

// setUpSnapshots adds the VirtualMachineSnapshot, content, restore and
// VirtualMachineClone controllers: volume snapshots are files next to the DataVolumes
// (cdi.FileSnapshots over the cluster's storage classes), the disk of a
// running guest is copied by its node's hypervisor as of one moment
// (clusterDiskCopier), guests are frozen through the agent of the node
// running them.
func (c *Cluster) setUpSnapshots(rc controller.ReconcilerOptions) error {
	files := &cdi.FileSnapshots{Classes: c.storage.classes(""), InUse: clusterDiskCopier{c}}
	so := controller.SnapshotOptions{Volumes: files, Freezer: clusterFreezer{c}}
	snap, err := controller.NewSnapshotReconciler(rc, so)
	if err != nil {
		return err
	}
	content, err := controller.NewSnapshotContentReconciler(rc, so)
	if err != nil {
		return err
	}
	restore, err := controller.NewRestoreReconciler(rc, so)
	if err != nil {
		return err
	}
	clone, err := controller.NewCloneReconciler(rc)
	if err != nil {
		return err
	}
	for _, ctrl := range []Controller{
		{Name: SnapshotController, Reconciler: snap, Watches: snap.Watches()},
		{Name: SnapshotContentController, Reconciler: content, Watches: content.Watches()},
		{Name: RestoreController, Reconciler: restore, Watches: restore.Watches()},
		{Name: CloneController, Reconciler: clone, Watches: clone.Watches()},
	} {
		if r, ok := c.opts.Replace[ctrl.Name]; ok {
			ctrl.Reconciler = r
			if w, ok := r.(Watcher); ok {
				ctrl.Watches = w.Watches()
			}
		}
		if err := c.addController(ctrl); err != nil {
			return err
		}
	}
	return nil
}

// clusterFreezer freezes a VMI's guest through the agent of its node.
type clusterFreezer struct{ c *Cluster }

func (f clusterFreezer) agentFor(ctx context.Context, namespace, name string) (interface {
	Freeze(ctx context.Context, namespace, name string) (int, error)
	Unfreeze(ctx context.Context, namespace, name string) (int, error)
}, error) {
	vmi := &virtkit.VirtualMachineInstance{}
	if err := f.c.store.Get(ctx, store.Key{Namespace: namespace, Name: name}, vmi); err != nil {
		return nil, err
	}
	n := f.c.Node(vmi.Status.NodeName)
	if n == nil {
		return nil, fmt.Errorf("vmi %s/%s runs on no node of this cluster: %w", namespace, name, hypervisor.ErrAgentUnavailable)
	}
	f.c.agents.mu.Lock()
	defer f.c.agents.mu.Unlock()
	return n.Agent, nil
}

// Freeze implements controller.GuestFreezer.
func (f clusterFreezer) Freeze(ctx context.Context, namespace, name string) error {
	a, err := f.agentFor(ctx, namespace, name)
	if err != nil {
		return err
	}
	_, err = a.Freeze(ctx, namespace, name)
	return err
}

// Unfreeze implements controller.GuestFreezer.
func (f clusterFreezer) Unfreeze(ctx context.Context, namespace, name string) error {
	a, err := f.agentFor(ctx, namespace, name)
	if err != nil {
		return err
	}
	_, err = a.Unfreeze(ctx, namespace, name)
	return err
}
