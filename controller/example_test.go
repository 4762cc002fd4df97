package controller_test

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

func ExampleStart() {
	st := store.NewMemory()
	ctx := context.Background()
	rs := virtkit.RunStrategyAlways
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "vm1"}}
	vm.Spec.RunStrategy = &rs
	if err := st.Create(ctx, vm); err != nil {
		panic(err)
	}
	err := actions.Start(ctx, st, store.Key{Namespace: "demo", Name: "vm1"}, actions.StartOptions{})
	fmt.Println(errors.Is(err, actions.ErrConflictingAction), err)

	// Stop turns an Always VM into a Halted one; Start turns it back on.
	if err := actions.Stop(ctx, st, store.Key{Namespace: "demo", Name: "vm1"}, actions.StopOptions{}); err != nil {
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
