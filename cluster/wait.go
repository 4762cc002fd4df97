package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// WaitFor watches one object until cond holds for it and returns the
// object as it was then. A missing object counts as not matching; cond
// sees nil for it, so waiting for deletion is possible. It honours ctx.
func WaitFor[T virtkit.Object](ctx context.Context, st store.Store, key store.Key, newObj func() T, list virtkit.ObjectList, cond func(obj T, found bool) bool) (T, error) {
	var zero T
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
		if cond(obj, found) {
			cancel()
			return obj, nil
		}
		relist := false
		for !relist {
			select {
			case <-ctx.Done():
				cancel()
				return zero, fmt.Errorf("waiting for %s: %w", key, ctx.Err())
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
				if ev.Type == store.Deleted {
					if cond(newObj(), false) {
						cancel()
						return newObj(), nil
					}
					continue
				}
				if cond(o, true) {
					cancel()
					return o, nil
				}
			}
		}
		cancel()
	}
}

// WaitForVMI waits until cond holds for the VMI.
func (c *Cluster) WaitForVMI(ctx context.Context, namespace, name string, cond func(vmi *virtkit.VirtualMachineInstance, found bool) bool) (*virtkit.VirtualMachineInstance, error) {
	return WaitFor(ctx, c.store, store.Key{Namespace: namespace, Name: name},
		func() *virtkit.VirtualMachineInstance { return &virtkit.VirtualMachineInstance{} },
		&virtkit.VirtualMachineInstanceList{}, cond)
}

// WaitForVM waits until cond holds for the VM.
func (c *Cluster) WaitForVM(ctx context.Context, namespace, name string, cond func(vm *virtkit.VirtualMachine, found bool) bool) (*virtkit.VirtualMachine, error) {
	return WaitFor(ctx, c.store, store.Key{Namespace: namespace, Name: name},
		func() *virtkit.VirtualMachine { return &virtkit.VirtualMachine{} },
		&virtkit.VirtualMachineList{}, cond)
}

// VMIPhaseIs matches a VMI in phase.
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
