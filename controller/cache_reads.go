package controller

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// readList returns the objects of list's kind that match opts, for
// reading only: the shared cache's own objects when there is a cache (no
// copies), else the items of a store List.
func (o ReconcilerOptions) readList(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) ([]virtkit.Object, error) {
	if o.Cache != nil {
		objs, err := o.Cache.ListShared(ctx, list, opts.Namespace)
		if err != nil {
			return nil, err
		}
		if opts.LabelSelector == nil {
			return objs, nil
		}
		out := objs[:0:0]
		for _, obj := range objs {
			if store.Matches(obj, "", opts.LabelSelector) {
				out = append(out, obj)
			}
		}
		return out, nil
	}
	if err := o.Store.List(ctx, list, opts); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("extract list items: %w", err)
	}
	out := make([]virtkit.Object, 0, len(items))
	for _, it := range items {
		if obj, ok := it.(virtkit.Object); ok {
			out = append(out, obj)
		}
	}
	return out, nil
}

// readVMI returns the VMI at key for reading only: the shared cache's
// object when there is a cache, else a copy from the store.
func (r *VMReconciler) readVMI(ctx context.Context, key store.Key) (*virtkit.VirtualMachineInstance, bool, error) {
	if r.o.Cache != nil {
		obj, ok, err := r.o.Cache.GetShared(ctx, vmiList(), key)
		if err != nil || !ok {
			return nil, false, err
		}
		return obj.(*virtkit.VirtualMachineInstance), true, nil
	}
	vmi := &virtkit.VirtualMachineInstance{}
	found, err := getOptional(ctx, r.o.Store, key, vmi)
	if !found {
		vmi = nil
	}
	return vmi, found, err
}

// readNodes returns the nodes a VMI may be placed on (only pin when it is
// set: a node-local DataVolume holds the disk), for reading only. With a
// shared cache they are shallow copies of the cache's objects, sharing their
// maps and slices (a scheduler must not modify its arguments), so placing a
// VMI costs no deep copy of every node.
func (r *VMIReconciler) readNodes(ctx context.Context, pin string) ([]virtkit.Node, error) {
	objs, err := r.o.readList(ctx, &virtkit.NodeList{}, store.ListOptions{})
	if err != nil {
		return nil, err
	}
	nodes := make([]virtkit.Node, 0, len(objs))
	for _, obj := range objs {
		n, ok := obj.(*virtkit.Node)
		if !ok || (pin != "" && n.Name != pin) {
			continue
		}
		nodes = append(nodes, *n)
	}
	return nodes, nil
}
