package reconcile_test

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
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
	rec := reconcile.ReconcilerFunc(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		fmt.Println("reconcile", req)
		if seen++; seen == 2 {
			cancel()
		}
		return reconcile.Result{}, nil
	})
	c, err := reconcile.New(st, rec, reconcile.Options{Name: "example"}, reconcile.Watch{
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
	err := fmt.Errorf("vm demo/a: %w", reconcile.TerminalError(errors.New("spec.template: required")))
	fmt.Println(reconcile.IsTerminal(err))
	fmt.Println(errors.Is(err, reconcile.TerminalError(nil)))
	fmt.Println(err)
	// Output:
	// true
	// true
	// vm demo/a: terminal error: spec.template: required
}
