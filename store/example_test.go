package store_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

func ExampleNewMemory() {
	ctx := context.Background()
	s := store.NewMemory()

	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"}}
	if err := s.Create(ctx, vm); err != nil {
		panic(err)
	}
	fmt.Println("created, generation", vm.Generation, "resourceVersion", vm.ResourceVersion)

	stale := vm.DeepCopy()
	always := virtkit.RunStrategyAlways
	vm.Spec.RunStrategy = &always
	if err := s.Update(ctx, vm); err != nil {
		panic(err)
	}
	fmt.Println("spec changed, generation", vm.Generation, "resourceVersion", vm.ResourceVersion)

	stale.Labels = map[string]string{"late": "writer"}
	err := s.Update(ctx, stale)
	fmt.Println("stale update conflicts:", errors.Is(err, store.ErrConflict))
	// Output:
	// created, generation 1 resourceVersion 1
	// spec changed, generation 2 resourceVersion 2
	// stale update conflicts: true
}

func ExampleMemory_Watch() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vmi1"}}
	if err := s.Create(ctx, vmi); err != nil {
		panic(err)
	}

	// List, then watch from the list's version: nothing in between is lost.
	list := &virtkit.VirtualMachineInstanceList{}
	if err := s.List(ctx, list, store.ListOptions{Namespace: "default"}); err != nil {
		panic(err)
	}
	vmi.Status.Phase = virtkit.Running
	if err := s.UpdateStatus(ctx, vmi); err != nil {
		panic(err)
	}
	events, err := s.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		panic(err)
	}
	if err := s.Delete(ctx, vmi, store.DeleteOptions{}); err != nil {
		panic(err)
	}
	fmt.Println("listed", len(list.Items), "at", list.ResourceVersion)
	for range 2 {
		ev := <-events
		fmt.Println(ev.Type, ev.Object.GetName(), ev.Object.GetResourceVersion(), ev.Object.(*virtkit.VirtualMachineInstance).Status.Phase)
	}
	// Output:
	// listed 1 at 1
	// MODIFIED vmi1 2 Running
	// DELETED vmi1 3 Running
}

// Tenant is a caller's own kind: cluster-scoped, without a status.
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct{ Quota int } `json:"spec"`
}

func (t *Tenant) DeepCopyObject() runtime.Object {
	out := *t
	t.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

func (l *TenantList) DeepCopyObject() runtime.Object {
	out := &TenantList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	for i := range l.Items {
		out.Items = append(out.Items, *l.Items[i].DeepCopyObject().(*Tenant))
	}
	return out
}

func ExampleNewMemoryWithOptions() {
	ctx := context.Background()
	s, err := store.NewMemoryWithOptions(store.Options{
		Kinds: []store.Kind{{Name: "Tenant", Object: &Tenant{}, List: &TenantList{}, ClusterScoped: true}},
		Clock: testingclock.NewFakePassiveClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)),
	})
	if err != nil {
		panic(err)
	}
	t := &Tenant{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenant-", Finalizers: []string{"example.com/cleanup"}}}
	if err := s.Create(ctx, t); err != nil {
		panic(err)
	}
	fmt.Println("created at", t.CreationTimestamp.UTC().Format(time.RFC3339), "generated name:", len(t.Name) == len("tenant-")+5)

	// A finalizer turns Delete into a mark; removing it completes the delete.
	if err := s.Delete(ctx, t, store.DeleteOptions{}); err != nil {
		panic(err)
	}
	fmt.Println("marked for deletion:", t.DeletionTimestamp != nil)
	t.Finalizers = nil
	if err := s.Update(ctx, t); err != nil {
		panic(err)
	}
	err = s.Get(ctx, store.KeyOf(t), &Tenant{})
	fmt.Println(errors.Is(err, store.ErrNotFound))

	err = s.Create(ctx, &Tenant{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "t"}})
	fmt.Println(err)
	// Output:
	// created at 2026-12-01T09:00:00Z generated name: true
	// marked for deletion: true
	// true
	// Tenant default/t: invalid: metadata.namespace: must be empty for cluster-scoped kind Tenant
}
