package controller_test

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

// A runner feeding a caller's own reconciler from a store watch.
func ExampleNew() {
	st := store.NewMemory()
	ctx, cancel := context.WithCancel(context.Background())
	for _, name := range []string{"a", "b"} {
		rs := virtkit.RunStrategyHalted
		vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: name}}
		vm.Spec.RunStrategy = &rs
		if err := st.Create(ctx, vm); err != nil {
			panic(err)
		}
	}

	seen := 0
	rec := controller.ReconcilerFunc(func(ctx context.Context, req controller.Request) (controller.Result, error) {
		fmt.Println("reconcile", req)
		if seen++; seen == 2 {
			cancel()
		}
		return controller.Result{}, nil
	})
	c, err := controller.New(st, rec, controller.Options{Name: "example"}, controller.Watch{
		NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineList{} },
	})
	if err != nil {
		panic(err)
	}
	if err := c.Start(ctx); err != nil {
		panic(err)
	}
	fmt.Println("reconciles:", c.Stats().Reconciles)
	// Output:
	// reconcile demo/a
	// reconcile demo/b
	// reconciles: 2
}

func ExampleTerminalError() {
	err := fmt.Errorf("vm demo/a: %w", controller.TerminalError(errors.New("spec.template: required")))
	fmt.Println(controller.IsTerminal(err))
	fmt.Println(errors.Is(err, controller.TerminalError(nil)))
	fmt.Println(err)
	// Output:
	// true
	// true
	// vm demo/a: terminal error: spec.template: required
}

func ExampleStart() {
	st := store.NewMemory()
	ctx := context.Background()
	rs := virtkit.RunStrategyAlways
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "vm1"}}
	vm.Spec.RunStrategy = &rs
	if err := st.Create(ctx, vm); err != nil {
		panic(err)
	}
	err := controller.Start(ctx, st, store.Key{Namespace: "demo", Name: "vm1"}, controller.StartOptions{})
	fmt.Println(errors.Is(err, controller.ErrConflictingAction), err)

	// Stop turns an Always VM into a Halted one; Start turns it back on.
	if err := controller.Stop(ctx, st, store.Key{Namespace: "demo", Name: "vm1"}, controller.StopOptions{}); err != nil {
		panic(err)
	}
	if err := st.Get(ctx, store.Key{Namespace: "demo", Name: "vm1"}, vm); err != nil {
		panic(err)
	}
	fmt.Println(*vm.Spec.RunStrategy)
	// Output:
	// true conflicting action: Always does not support manual start requests
	// Halted
}
