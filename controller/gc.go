package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
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
// dataVolumeTemplates); an object of any other kind virtkit knows (but
// Event) deleted with Orphan or Foreground just has the finalizer removed
// (it owns nothing). Owners found gone or alive are checked against
// candidates from the shared cache when there is one, each confirmed by
// reading it and then its owner from the store before anything is written.
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
	// finalized: the kind's controller puts a finalizer on every object
	// before it makes dependents, so only a deletion mark matters (a new
	// object without finalizers is no reason to look).
	finalized bool
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
			newList:   func() virtkit.ObjectList { return &virtkit.VirtualMachineList{} }, owner: true, finalized: true,
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
	// finalizer a delete with Orphan or Foreground put on one. Events are
	// left out: watching them would keep every Event in the shared cache.
	for _, gvk := range virtkit.KnownKinds() {
		if _, ok := kinds[gvk.Kind]; ok || gvk.Kind == virtkit.KindEvent {
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
func GarbageCollectorRequest(kind, namespace, name string) reconcile.Request {
	return reconcile.Request{Namespace: namespace, Name: kind + "/" + name}
}

// Watches returns what the collector must be fed: owners when they are
// being deleted or may have gone without a deletion mark (no finalizers),
// dependents' owners when a dependent is being deleted (an owner deleted in
// the foreground waits for it), and any object deleted with Orphan or
// Foreground.
func (g *GarbageCollector) Watches() []reconcile.Watch {
	names := make([]string, 0, len(g.kinds))
	for name := range g.kinds {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]reconcile.Watch, 0, len(names))
	for _, name := range names {
		k := g.kinds[name]
		out = append(out, reconcile.Watch{NewList: k.newList, Map: g.mapper(name, k)})
	}
	return out
}

func (g *GarbageCollector) mapper(kind string, k gcKind) reconcile.MapFunc {
	return func(_ context.Context, obj virtkit.Object) []reconcile.Request {
		var out []reconcile.Request
		gone := obj.GetDeletionTimestamp() != nil || len(obj.GetFinalizers()) == 0 && !k.finalized
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
func (g *GarbageCollector) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	kind, name, ok := strings.Cut(req.Name, "/")
	k, known := g.kinds[kind]
	if !ok || !known {
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("garbage collector: request %s: %w: want Kind/name of a collected kind", req, store.ErrInvalid))
	}
	key := store.Key{Namespace: req.Namespace, Name: name}
	owner := k.newObject()
	found, err := getOptional(ctx, g.o.Store, key, owner)
	if err != nil {
		return reconcile.Result{}, err
	}
	deleting := found && owner.GetDeletionTimestamp() != nil
	if !k.owner {
		if deleting && propagating(owner) {
			return reconcile.Result{}, g.removeFinalizer(ctx, k, key, owner.GetUID(), store.FinalizerOrphanDependents, store.FinalizerDeleteDependents)
		}
		return reconcile.Result{}, nil
	}
	switch {
	case !found || !deleting || !propagating(owner):
		// Gone, alive or going in the background: references to a gone
		// owner of this name dangle. The candidates may come from the
		// shared cache; each is checked against the store.
		deps, err := g.dependents(ctx, req.Namespace, kind, name, false)
		if err != nil {
			return reconcile.Result{}, err
		}
		var errs []error
		for _, dep := range deps {
			if found && !slices.ContainsFunc(dep.GetOwnerReferences(), func(r metav1.OwnerReference) bool {
				return r.Kind == kind && r.Name == name && r.UID != owner.GetUID()
			}) {
				continue
			}
			errs = append(errs, g.collectIfDangling(ctx, k, key, kind, dep))
		}
		return reconcile.Result{}, errors.Join(errs...)
	case hasFinalizer(owner, store.FinalizerOrphanDependents):
		deps, err := g.dependents(ctx, req.Namespace, kind, name, true)
		if err != nil {
			return reconcile.Result{}, err
		}
		if err := g.orphan(ctx, owner.GetUID(), deps); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, g.removeFinalizer(ctx, k, key, owner.GetUID(), store.FinalizerOrphanDependents)
	default: // foregroundDeletion
		deps, err := g.dependents(ctx, req.Namespace, kind, name, true)
		if err != nil {
			return reconcile.Result{}, err
		}
		waiting, err := g.deleteDependents(ctx, owner.GetUID(), deps)
		if err != nil || waiting {
			return reconcile.Result{RequeueAfter: foregroundRecheck}, err
		}
		return reconcile.Result{}, g.removeFinalizer(ctx, k, key, owner.GetUID(), store.FinalizerDeleteDependents)
	}
}

// dependents lists the objects of namespace with an owner reference to the
// owner of kind named name (any uid): from the store (the caller's own
// copies) or, when fromStore is false, possibly the shared cache's objects
// (to read only; they may lag the store).
func (g *GarbageCollector) dependents(ctx context.Context, namespace, kind, name string, fromStore bool) ([]virtkit.Object, error) {
	o := g.o
	if fromStore {
		o.Cache = nil
	}
	var out []virtkit.Object
	for _, dk := range g.kinds {
		if !dk.dependent {
			continue
		}
		objs, err := o.readList(ctx, dk.newList(), store.ListOptions{Namespace: namespace})
		if err != nil {
			return nil, fmt.Errorf("garbage collector: %w", err)
		}
		for _, obj := range objs {
			if slices.ContainsFunc(obj.GetOwnerReferences(), func(r metav1.OwnerReference) bool { return r.Kind == kind && r.Name == name }) {
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
		if err := g.deleteObject(ctx, dep, false); err != nil {
			return true, err
		}
	}
	return waiting, nil
}

// collectIfDangling reads dep and then its owner of kind at ownerKey from
// the store (in that order: a reference to an owner's uid is written after
// the owner, so the owner read next is at least as new) and, when dep
// refers to an owner of that name that is gone, drops those references if
// dep has another live owner, or deletes dep.
func (g *GarbageCollector) collectIfDangling(ctx context.Context, k gcKind, ownerKey store.Key, kind string, dep virtkit.Object) error {
	fresh := dep.DeepCopyObject().(virtkit.Object)
	found, err := getOptional(ctx, g.o.Store, store.KeyOf(dep), fresh)
	if err != nil || !found || fresh.GetUID() != dep.GetUID() {
		return err
	}
	owner := k.newObject()
	ownerFound, err := getOptional(ctx, g.o.Store, ownerKey, owner)
	if err != nil {
		return err
	}
	var live types.UID
	if ownerFound {
		live = owner.GetUID()
	}
	dangling := func(r metav1.OwnerReference) bool { return r.Kind == kind && r.Name == ownerKey.Name && r.UID != live }
	if !slices.ContainsFunc(fresh.GetOwnerReferences(), dangling) {
		return nil
	}
	others := slices.DeleteFunc(slices.Clone(fresh.GetOwnerReferences()), dangling)
	alive, err := g.anyAlive(ctx, fresh.GetNamespace(), others)
	switch {
	case err != nil:
		return err
	case alive:
		return g.dropReferences(ctx, fresh, dangling)
	case fresh.GetDeletionTimestamp() == nil:
		return g.deleteObject(ctx, fresh, true)
	}
	return nil
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

// deleteObject deletes obj (that very object: by uid; unchanged since it
// was read, with sameVersion) in the background.
func (g *GarbageCollector) deleteObject(ctx context.Context, obj virtkit.Object, sameVersion bool) error {
	uid := obj.GetUID()
	pre := &metav1.Preconditions{UID: &uid}
	if sameVersion {
		rv := obj.GetResourceVersion()
		pre.ResourceVersion = &rv
	}
	bg := metav1.DeletePropagationBackground
	target := obj.DeepCopyObject().(virtkit.Object)
	err := g.o.Store.Delete(ctx, target, store.DeleteOptions{Preconditions: pre, PropagationPolicy: &bg})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case errors.Is(err, store.ErrConflict) && sameVersion:
		return fmt.Errorf("garbage collector: %s %s changed; looking again: %w", obj.GetObjectKind().GroupVersionKind().Kind, store.KeyOf(obj), err)
	case errors.Is(err, store.ErrConflict):
		return nil // another object of that name
	}
	if err != nil {
		return fmt.Errorf("garbage collector: delete %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, store.KeyOf(obj), err)
	}
	g.o.Logger.DebugContext(ctx, "garbage collector deleted a dependent", "object", store.KeyOf(obj).String(), "uid", uid)
	return nil
}

// removeFinalizer removes fs from the object of kind k at key (of that uid).
func (g *GarbageCollector) removeFinalizer(ctx context.Context, k gcKind, key store.Key, uid types.UID, fs ...string) error {
	return ignoreNotFound(retryOnConflict(ctx, func() error {
		obj := k.newObject()
		if err := g.o.Store.Get(ctx, key, obj); err != nil {
			return err
		}
		if obj.GetUID() != uid || !removeFinalizers(obj, fs...) {
			return nil
		}
		return g.o.Store.Update(ctx, obj)
	}))
}
