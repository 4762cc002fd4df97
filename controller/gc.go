package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// GarbageCollector deletes and orphans dependents through their
// metadata.ownerReferences, as Kubernetes' garbage collector does for the
// three propagation policies of a delete (store.DeleteOptions):
//
//   - Orphan: the owner carries the "orphan" finalizer; the collector
//     removes the owner's references from its dependents, then the
//     finalizer, and the store lets the owner go.
//   - Foreground: the owner carries the "foregroundDeletion" finalizer; the
//     collector deletes its dependents and removes the finalizer once no
//     dependent with blockOwnerDeletion is left.
//   - Background: the owner goes at once; the collector deletes the
//     dependents whose owners are all gone (by uid) and drops the
//     references to gone owners from dependents that still have another.
//
// Owners are VirtualMachines and VirtualMachineInstanceReplicaSets,
// dependents VirtualMachineInstances and DataVolumes (a VM's
// dataVolumeTemplates); an object of any other kind virtkit knows deleted
// with Orphan or Foreground just has the finalizer removed (it owns
// nothing).
// Dependents are deleted in the background: none of them owns anything.
//
// Requests name the object as "Kind/name" (see [GarbageCollectorRequest]);
// [GarbageCollector.Watches] maps changes to them.
type GarbageCollector struct {
	o     ReconcilerOptions
	kinds map[string]gcKind
}

type gcKind struct {
	newObject func() virtkit.Object
	newList   func() virtkit.ObjectList
	owner     bool // may own dependents
	dependent bool // may be owned
}

// foregroundRecheck is how soon an owner deleted in the foreground is looked
// at again while dependents remain (their deletion also enqueues it).
const foregroundRecheck = 5 * time.Second

// NewGarbageCollector returns a garbage collector over o.Store.
func NewGarbageCollector(o ReconcilerOptions) (*GarbageCollector, error) {
	o, err := o.withDefaults("garbage collector")
	if err != nil {
		return nil, err
	}
	kinds := map[string]gcKind{
		virtkit.KindVirtualMachine: {
			newObject: func() virtkit.Object { return &virtkit.VirtualMachine{} },
			newList:   func() virtkit.ObjectList { return &virtkit.VirtualMachineList{} }, owner: true,
		},
		virtkit.KindVirtualMachineInstanceReplicaSet: {
			newObject: func() virtkit.Object { return &virtkit.VirtualMachineInstanceReplicaSet{} },
			newList:   rsList, owner: true,
		},
		virtkit.KindVirtualMachineInstance: {
			newObject: func() virtkit.Object { return &virtkit.VirtualMachineInstance{} },
			newList:   vmiList, dependent: true,
		},
		virtkit.KindDataVolume: {
			newObject: func() virtkit.Object { return &virtkit.DataVolume{} },
			newList:   func() virtkit.ObjectList { return &virtkit.DataVolumeList{} }, dependent: true,
		},
		virtkit.KindVirtualMachineInstanceMigration: {
			newObject: func() virtkit.Object { return &virtkit.VirtualMachineInstanceMigration{} },
			newList:   func() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceMigrationList{} },
		},
	}
	// Every other kind owns nothing here; the collector only removes the
	// finalizer a delete with Orphan or Foreground put on one.
	for _, gvk := range virtkit.KnownKinds() {
		if _, ok := kinds[gvk.Kind]; ok {
			continue
		}
		if _, err := virtkit.NewObject(gvk); err != nil {
			continue
		}
		kinds[gvk.Kind] = gcKind{
			newObject: func() virtkit.Object { obj, _ := virtkit.NewObject(gvk); return obj },
			newList:   func() virtkit.ObjectList { list, _ := virtkit.NewObjectList(gvk); return list },
		}
	}
	return &GarbageCollector{o: o, kinds: kinds}, nil
}

// GarbageCollectorRequest is the request that makes the collector look at
// the object of kind at namespace/name.
func GarbageCollectorRequest(kind, namespace, name string) Request {
	return Request{Namespace: namespace, Name: kind + "/" + name}
}

// Watches returns what the collector must be fed: owners when they are
// being deleted or may have gone without a deletion mark (no finalizers),
// dependents' owners when a dependent is being deleted (an owner deleted in
// the foreground waits for it), and any object deleted with Orphan or
// Foreground.
func (g *GarbageCollector) Watches() []Watch {
	names := make([]string, 0, len(g.kinds))
	for name := range g.kinds {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]Watch, 0, len(names))
	for _, name := range names {
		k := g.kinds[name]
		out = append(out, Watch{NewList: k.newList, Map: g.mapper(name, k)})
	}
	return out
}

func (g *GarbageCollector) mapper(kind string, k gcKind) MapFunc {
	return func(_ context.Context, obj virtkit.Object) []Request {
		var out []Request
		gone := obj.GetDeletionTimestamp() != nil || len(obj.GetFinalizers()) == 0
		if propagating(obj) || (k.owner && gone) {
			out = append(out, GarbageCollectorRequest(kind, obj.GetNamespace(), obj.GetName()))
		}
		if k.dependent && gone {
			for _, ref := range obj.GetOwnerReferences() {
				if ok := g.kinds[ref.Kind].owner; ok {
					out = append(out, GarbageCollectorRequest(ref.Kind, obj.GetNamespace(), ref.Name))
				}
			}
		}
		return out
	}
}

// propagating: obj is being deleted with Orphan or Foreground.
func propagating(obj metav1.Object) bool {
	return obj.GetDeletionTimestamp() != nil &&
		(hasFinalizer(obj, store.FinalizerOrphanDependents) || hasFinalizer(obj, store.FinalizerDeleteDependents))
}

// Reconcile implements Reconciler.
func (g *GarbageCollector) Reconcile(ctx context.Context, req Request) (Result, error) {
	kind, name, ok := strings.Cut(req.Name, "/")
	k, known := g.kinds[kind]
	if !ok || !known {
		return Result{}, TerminalError(fmt.Errorf("garbage collector: request %s: %w: want Kind/name of a collected kind", req, store.ErrInvalid))
	}
	key := store.Key{Namespace: req.Namespace, Name: name}
	// Dependents first, then the owner: a dependent naming an owner's uid
	// was made after that owner, so the owner read next is at least as new.
	var deps []virtkit.Object
	if k.owner {
		var err error
		if deps, err = g.dependents(ctx, req.Namespace, kind, name); err != nil {
			return Result{}, err
		}
	}
	owner := k.newObject()
	found, err := getOptional(ctx, g.o.Store, key, owner)
	if err != nil {
		return Result{}, err
	}
	switch {
	case !found:
		return Result{}, g.collectDangling(ctx, kind, name, "", deps)
	case owner.GetDeletionTimestamp() == nil:
		// References to an earlier owner of the same name dangle.
		return Result{}, g.collectDangling(ctx, kind, name, owner.GetUID(), deps)
	case hasFinalizer(owner, store.FinalizerOrphanDependents):
		if err := g.orphan(ctx, owner.GetUID(), deps); err != nil {
			return Result{}, err
		}
		return Result{}, g.removeFinalizer(ctx, k, key, owner.GetUID(), store.FinalizerOrphanDependents)
	case hasFinalizer(owner, store.FinalizerDeleteDependents):
		waiting, err := g.deleteDependents(ctx, owner.GetUID(), deps)
		if err != nil || waiting {
			return Result{RequeueAfter: foregroundRecheck}, err
		}
		return Result{}, g.removeFinalizer(ctx, k, key, owner.GetUID(), store.FinalizerDeleteDependents)
	}
	return Result{}, nil
}

// dependents lists the objects of namespace with an owner reference to the
// owner of kind named name (any uid).
func (g *GarbageCollector) dependents(ctx context.Context, namespace, kind, name string) ([]virtkit.Object, error) {
	var out []virtkit.Object
	for _, dk := range g.kinds {
		if !dk.dependent {
			continue
		}
		list := dk.newList()
		if err := g.o.Store.List(ctx, list, store.ListOptions{Namespace: namespace}); err != nil {
			return nil, fmt.Errorf("garbage collector: %w", err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, fmt.Errorf("garbage collector: %w: %w", store.ErrUnknownKind, err)
		}
		for _, it := range items {
			obj, ok := it.(virtkit.Object)
			if ok && slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.Kind == kind && r.Name == name }) {
				out = append(out, obj)
			}
		}
	}
	return out, nil
}

// orphan removes the references to uid from deps.
func (g *GarbageCollector) orphan(ctx context.Context, uid types.UID, deps []virtkit.Object) error {
	for _, dep := range deps {
		if err := g.dropReferences(ctx, dep, func(r metav1.OwnerReference) bool { return r.UID == uid }); err != nil {
			return err
		}
	}
	return nil
}

// dropReferences removes the owner references drop selects from dep,
// re-reading it on conflicts.
func (g *GarbageCollector) dropReferences(ctx context.Context, dep virtkit.Object, drop func(metav1.OwnerReference) bool) error {
	obj := dep
	return ignoreNotFound(retryOnConflict(ctx, func() error {
		refs := obj.GetOwnerReferences()
		kept := slices.DeleteFunc(slices.Clone(refs), drop)
		if len(kept) == len(refs) {
			return nil
		}
		obj.SetOwnerReferences(kept)
		err := g.o.Store.Update(ctx, obj)
		if errors.Is(err, store.ErrConflict) {
			fresh := obj.DeepCopyObject().(virtkit.Object)
			if gerr := g.o.Store.Get(ctx, store.KeyOf(obj), fresh); gerr != nil {
				return gerr
			}
			if fresh.GetUID() != dep.GetUID() {
				return nil // another object of the same name now
			}
			obj = fresh
		}
		return err
	}))
}

// deleteDependents deletes the dependents of the owner of uid and reports
// whether one that blocks the owner's deletion is still there.
func (g *GarbageCollector) deleteDependents(ctx context.Context, uid types.UID, deps []virtkit.Object) (waiting bool, err error) {
	for _, dep := range deps {
		i := slices.IndexFunc(dep.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.UID == uid })
		if i < 0 {
			continue
		}
		ref := dep.GetOwnerReferences()[i]
		if ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion {
			waiting = true
		}
		if dep.GetDeletionTimestamp() != nil {
			continue
		}
		if err := g.deleteObject(ctx, dep); err != nil {
			return true, err
		}
	}
	return waiting, nil
}

// collectDangling handles the dependents of gone owners of kind named
// name (any uid but live, the uid of the one there now): one with another
// live owner loses the references to the gone one, the others are deleted.
func (g *GarbageCollector) collectDangling(ctx context.Context, kind, name string, live types.UID, deps []virtkit.Object) error {
	var errs []error
	dangling := func(r metav1.OwnerReference) bool { return r.Kind == kind && r.Name == name && r.UID != live }
	for _, dep := range deps {
		if !slices.ContainsFunc(dep.GetOwnerReferences(), dangling) {
			continue
		}
		others := slices.DeleteFunc(slices.Clone(dep.GetOwnerReferences()), dangling)
		alive, err := g.anyAlive(ctx, dep.GetNamespace(), others)
		switch {
		case err != nil:
			errs = append(errs, err)
		case alive:
			errs = append(errs, g.dropReferences(ctx, dep, dangling))
		case dep.GetDeletionTimestamp() == nil:
			errs = append(errs, g.deleteObject(ctx, dep))
		}
	}
	return errors.Join(errs...)
}

// anyAlive reports whether one of refs names an existing object of that
// uid; an owner of a kind the collector does not know counts as alive.
func (g *GarbageCollector) anyAlive(ctx context.Context, namespace string, refs []metav1.OwnerReference) (bool, error) {
	for _, ref := range refs {
		k, ok := g.kinds[ref.Kind]
		if !ok {
			return true, nil
		}
		obj := k.newObject()
		found, err := getOptional(ctx, g.o.Store, store.Key{Namespace: namespace, Name: ref.Name}, obj)
		if err != nil {
			return false, err
		}
		if found && obj.GetUID() == ref.UID {
			return true, nil
		}
	}
	return false, nil
}

// deleteObject deletes obj (that very object: by uid) in the background.
func (g *GarbageCollector) deleteObject(ctx context.Context, obj virtkit.Object) error {
	uid := obj.GetUID()
	bg := metav1.DeletePropagationBackground
	target := obj.DeepCopyObject().(virtkit.Object)
	err := g.o.Store.Delete(ctx, target, store.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &bg})
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
		return nil // gone, or another object of that name
	}
	if err != nil {
		return fmt.Errorf("garbage collector: delete %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, store.KeyOf(obj), err)
	}
	g.o.Logger.DebugContext(ctx, "garbage collector deleted a dependent", "object", store.KeyOf(obj).String(), "uid", uid)
	return nil
}

// removeFinalizer removes f from the object of kind k at key (of that uid).
func (g *GarbageCollector) removeFinalizer(ctx context.Context, k gcKind, key store.Key, uid types.UID, f string) error {
	return ignoreNotFound(retryOnConflict(ctx, func() error {
		obj := k.newObject()
		if err := g.o.Store.Get(ctx, key, obj); err != nil {
			return err
		}
		if obj.GetUID() != uid || !removeFinalizers(obj, f) {
			return nil
		}
		return g.o.Store.Update(ctx, obj)
	}))
}
