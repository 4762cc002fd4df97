package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// ErrOwnerInvariant is wrapped by the errors of [CheckOwnersAndFinalizers].
var ErrOwnerInvariant = errors.New("invariant violated")

// controllerFinalizers are the finalizers the cluster's controllers (not a
// node agent, whose node may be down) remove; at quiescence no object being
// deleted may hold only these.
var controllerFinalizers = []string{
	store.FinalizerOrphanDependents,
	store.FinalizerDeleteDependents,
	virtkit.VirtualMachineControllerFinalizer,
	virtkit.VirtualMachineInstanceFinalizer,
}

// CheckOwnersAndFinalizers checks the store of c for what the garbage
// collector and the controllers' deletion paths must leave behind once the
// cluster is quiescent (call it after [Cluster.Settle]): no object has an
// owner reference to a uid that no longer exists, no object being deleted
// holds only finalizers the controllers remove (orphan, foregroundDeletion,
// the VM and VMI controllers' finalizers), and no two objects share a uid.
// The error wraps ErrOwnerInvariant and lists up to ten violations.
func CheckOwnersAndFinalizers(ctx context.Context, c *Cluster) error {
	return CheckOwnersAndFinalizersIn(ctx, c.store)
}

// CheckOwnersAndFinalizersIn is [CheckOwnersAndFinalizers] on a store.
func CheckOwnersAndFinalizersIn(ctx context.Context, st store.Store) error {
	type ident struct{ kind, namespace, name string }
	uids := map[ident]types.UID{}
	byUID := map[types.UID]ident{}
	var objs []virtkit.Object
	var kinds []string
	var problems []string
	for _, gvk := range virtkit.KnownKinds() {
		list, err := virtkit.NewObjectList(gvk)
		if err != nil {
			continue
		}
		if err := st.List(ctx, list, store.ListOptions{}); err != nil {
			if errors.Is(err, store.ErrUnknownKind) {
				continue // a store without this kind
			}
			return fmt.Errorf("check owners and finalizers: list %s: %w", gvk.Kind, err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return fmt.Errorf("check owners and finalizers: %s: %w", gvk.Kind, err)
		}
		kinds = append(kinds, gvk.Kind)
		for _, it := range items {
			obj, ok := it.(virtkit.Object)
			if !ok {
				continue
			}
			id := ident{gvk.Kind, obj.GetNamespace(), obj.GetName()}
			if prev, dup := byUID[obj.GetUID()]; dup && obj.GetUID() != "" {
				problems = append(problems, fmt.Sprintf("%s %s/%s and %s %s/%s share uid %s",
					prev.kind, prev.namespace, prev.name, id.kind, id.namespace, id.name, obj.GetUID()))
			}
			byUID[obj.GetUID()] = id
			uids[id] = obj.GetUID()
			objs = append(objs, obj)
		}
	}
	for _, obj := range objs {
		kind := obj.GetObjectKind().GroupVersionKind().Kind
		where := fmt.Sprintf("%s %s", kind, store.KeyOf(obj))
		for _, ref := range obj.GetOwnerReferences() {
			if !slices.Contains(kinds, ref.Kind) {
				continue // an owner kind this store does not hold
			}
			uid, ok := uids[ident{ref.Kind, obj.GetNamespace(), ref.Name}]
			if !ok {
				uid, ok = uids[ident{ref.Kind, "", ref.Name}] // cluster-scoped owner
			}
			if !ok || uid != ref.UID {
				problems = append(problems, fmt.Sprintf("%s: owner reference to %s %s uid %s, which no longer exists", where, ref.Kind, ref.Name, ref.UID))
			}
		}
		fins := obj.GetFinalizers()
		if obj.GetDeletionTimestamp() != nil && len(fins) > 0 &&
			!slices.ContainsFunc(fins, func(f string) bool { return !slices.Contains(controllerFinalizers, f) }) {
			problems = append(problems, fmt.Sprintf("%s: being deleted since %s, held only by controller finalizers %v",
				where, obj.GetDeletionTimestamp().UTC().Format("15:04:05"), fins))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	n := len(problems)
	if n > 10 {
		problems = problems[:10]
	}
	return fmt.Errorf("%w: %d owner/finalizer problem(s): %v", ErrOwnerInvariant, n, problems)
}
