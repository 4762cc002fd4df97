package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// A caller's own reconciler runs next to the built-in ones (Options.Extra):
// it watches VMIs and records on each running one, as an annotation, that
// it has seen it. It reads everything from the store, so it is
// level-triggered; a conflict with another writer is returned as an error
// and the runner retries with backoff.
func ExampleOptions_extra() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	var st store.Store = store.NewMemory()
	const seen = "example.com/seen"
	audit := reconcile.ReconcilerFunc(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		var vmi virtkit.VirtualMachineInstance
		err := st.Get(ctx, store.Key{Namespace: req.Namespace, Name: req.Name}, &vmi)
		if errors.Is(err, store.ErrNotFound) {
			return reconcile.Result{}, nil // deleted: nothing to do
		}
		if err != nil {
			return reconcile.Result{}, err
		}
		if vmi.Status.Phase != virtkit.Running || vmi.Annotations[seen] != "" {
			return reconcile.Result{}, nil
		}
		if vmi.Annotations == nil {
			vmi.Annotations = map[string]string{}
		}
		vmi.Annotations[seen] = "running"
		return reconcile.Result{}, st.Update(ctx, &vmi) // ErrConflict: retried
	})

	c, err := cluster.New(cluster.Options{
		Store: st,
		Extra: []cluster.Controller{{
			Name:       "audit",
			Reconciler: audit,
			Watches: []reconcile.Watch{{
				NewList: func() virtkit.ObjectList { return &virtkit.VirtualMachineInstanceList{} },
			}},
		}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); <-done }()

	memory := resource.MustParse("256Mi")
	vmi := &virtkit.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: virtkit.VirtualMachineInstanceSpec{
			Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &memory}},
		},
	}
	if err := c.Apply(ctx, vmi); err != nil {
		fmt.Println(err)
		return
	}
	got, err := c.WaitForVMI(ctx, "default", "web", func(vmi *virtkit.VirtualMachineInstance, found bool) bool {
		return found && vmi.Annotations[seen] != ""
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Name, got.Status.Phase, seen+"="+got.Annotations[seen])
	// Output: web Running example.com/seen=running
}
