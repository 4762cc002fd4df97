package cluster

import (
	"context"
	"errors"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// WaitFor watches one object until cond holds for it and returns the
// object as it was then. A missing object counts as not matching; cond
// sees a zero object and found=false for it, so waiting for deletion is
// possible. When ctx ends first the error is a [*WaitError] that reports
// the last state seen and wraps ctx.Err().
func WaitFor[T virtkit.Object](ctx context.Context, st store.Store, key store.Key, newObj func() T, list virtkit.ObjectList, cond func(obj T, found bool) bool) (T, error) {
	return waitFor(ctx, st, key, newObj, list, cond, nil)
}

// waitFor is WaitFor that also gives up, with ErrFinalState, once final
// reports that the object can no longer change (nil: never).
func waitFor[T virtkit.Object](ctx context.Context, st store.Store, key store.Key, newObj func() T, list virtkit.ObjectList, cond func(obj T, found bool) bool, final func(T) bool) (T, error) {
	var zero T
	last := lastSeen{key: key}
	check := func(obj T, found bool) (bool, error) {
		last.observe(obj, found)
		if cond(obj, found) {
			return true, nil
		}
		if found && final != nil && final(obj) {
			return false, last.err(ErrFinalState)
		}
		return false, nil
	}
	for {
		// Watch first, then read: no change between the two is missed.
		wctx, cancel := context.WithCancel(ctx)
		events, err := st.Watch(wctx, list, store.WatchOptions{Namespace: key.Namespace})
		if err != nil {
			cancel()
			return zero, err
		}
		obj := newObj()
		err = st.Get(ctx, key, obj)
		found := err == nil
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			cancel()
			return zero, err
		}
		if ok, err := check(obj, found); ok || err != nil {
			cancel()
			if err != nil {
				return zero, err
			}
			return obj, nil
		}
		relist := false
		for !relist {
			select {
			case <-ctx.Done():
				cancel()
				return zero, last.err(ctx.Err())
			case ev, ok := <-events:
				if !ok || ev.Type == store.Error {
					relist = true
					break
				}
				if ev.Object == nil || ev.Object.GetName() != key.Name || ev.Object.GetNamespace() != key.Namespace {
					continue
				}
				o, ok := ev.Object.(T)
				if !ok {
					continue
				}
				found := ev.Type != store.Deleted
				if !found {
					o = newObj()
				}
				if ok, err := check(o, found); ok || err != nil {
					cancel()
					if err != nil {
						return zero, err
					}
					return o, nil
				}
			}
		}
		cancel()
	}
}

// WaitForVMI waits until cond holds for the VMI (see [WaitFor]).
func (c *Cluster) WaitForVMI(ctx context.Context, namespace, name string, cond Predicate[*virtkit.VirtualMachineInstance]) (*virtkit.VirtualMachineInstance, error) {
	return WaitFor(ctx, c.store, store.Key{Namespace: namespace, Name: name},
		func() *virtkit.VirtualMachineInstance { return &virtkit.VirtualMachineInstance{} },
		&virtkit.VirtualMachineInstanceList{}, cond)
}

// WaitForVM waits until cond holds for the VM (see [WaitFor]).
func (c *Cluster) WaitForVM(ctx context.Context, namespace, name string, cond Predicate[*virtkit.VirtualMachine]) (*virtkit.VirtualMachine, error) {
	return WaitFor(ctx, c.store, store.Key{Namespace: namespace, Name: name},
		func() *virtkit.VirtualMachine { return &virtkit.VirtualMachine{} },
		&virtkit.VirtualMachineList{}, cond)
}

// VMIPhaseIs matches a VMI in phase; [VMIPhase] is the same as a
// composable [Predicate].
func VMIPhaseIs(phase virtkit.VirtualMachineInstancePhase) func(*virtkit.VirtualMachineInstance, bool) bool {
	return func(vmi *virtkit.VirtualMachineInstance, found bool) bool { return found && vmi.Status.Phase == phase }
}

// VMPrintableStatusIs matches a VM whose printableStatus is s.
func VMPrintableStatusIs(s virtkit.VirtualMachinePrintableStatus) func(*virtkit.VirtualMachine, bool) bool {
	return func(vm *virtkit.VirtualMachine, found bool) bool { return found && vm.Status.PrintableStatus == s }
}

// Gone matches a missing object.
func Gone[T virtkit.Object]() func(T, bool) bool {
	return func(_ T, found bool) bool { return !found }
}

// WaitForMigration waits until cond holds for the migration (see
// [WaitFor]). A migration that reaches a final phase (Succeeded or Failed)
// in which cond does not hold ends the wait with a [*WaitError] wrapping
// ErrFinalState: it will not change any more.
func (c *Cluster) WaitForMigration(ctx context.Context, namespace, name string, cond Predicate[*virtkit.VirtualMachineInstanceMigration]) (*virtkit.VirtualMachineInstanceMigration, error) {
	return waitFor(ctx, c.store, store.Key{Namespace: namespace, Name: name},
		func() *virtkit.VirtualMachineInstanceMigration { return &virtkit.VirtualMachineInstanceMigration{} },
		&virtkit.VirtualMachineInstanceMigrationList{}, cond,
		func(m *virtkit.VirtualMachineInstanceMigration) bool {
			return m.Status.Phase == virtkit.MigrationSucceeded || m.Status.Phase == virtkit.MigrationFailed
		})
}

// WaitForReplicaSet waits until cond holds for the VMI replica set (see
// [WaitFor]), for instance [ReplicaSetReady].
func (c *Cluster) WaitForReplicaSet(ctx context.Context, namespace, name string, cond Predicate[*virtkit.VirtualMachineInstanceReplicaSet]) (*virtkit.VirtualMachineInstanceReplicaSet, error) {
	return WaitFor(ctx, c.store, store.Key{Namespace: namespace, Name: name},
		func() *virtkit.VirtualMachineInstanceReplicaSet { return &virtkit.VirtualMachineInstanceReplicaSet{} },
		&virtkit.VirtualMachineInstanceReplicaSetList{}, cond)
}
