package reconcile_test

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// One SharedCache per process: every controller given it as its source
// shares one store watch per kind, and reads go to its indexes.
func ExampleSharedCache() {
	st := store.NewMemory()
	cache, err := reconcile.NewSharedCache(st, reconcile.SharedCacheOptions{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { _ = cache.Start(ctx) }()

	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}}
	vmi.Status.NodeName = "node-1"
	if err := st.Create(ctx, vmi); err != nil {
		panic(err)
	}
	// A controller fed by the cache (instead of the store).
	seen := make(chan string, 1)
	ctrl, err := reconcile.New(cache, reconcile.ReconcilerFunc(func(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
		seen <- req.String()
		return reconcile.Result{}, nil
	}), reconcile.Options{}, reconcile.Watch{NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceList{} }})
	if err != nil {
		panic(err)
	}
	go func() { _ = ctrl.Start(ctx) }()
	fmt.Println("reconciled", <-seen)

	onNode, err := cache.ByIndex(ctx, &virtkit.VirtualMachineInstanceList{}, reconcile.IndexNode, "node-1")
	if err != nil {
		panic(err)
	}
	fmt.Println("VMIs on node-1:", len(onNode))
	// Output:
	// reconciled default/a
	// VMIs on node-1: 1
}
