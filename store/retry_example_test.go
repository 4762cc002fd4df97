package store_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// A read-modify-write that another writer overtakes once: the stale write
// conflicts, RetryOnConflict re-runs the function, which re-reads and
// reapplies the change.
func ExampleRetryOnConflict() {
	ctx := context.Background()
	s := store.NewMemory()
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm"}}
	if err := s.Create(ctx, vm); err != nil {
		panic(err)
	}

	attempts := 0
	err := store.RetryOnConflict(ctx, store.Backoff{}, func(ctx context.Context) error {
		attempts++
		var cur virtkit.VirtualMachine
		if err := s.Get(ctx, store.KeyOf(vm), &cur); err != nil {
			return err
		}
		if attempts == 1 { // someone else writes between our read and write
			other := cur.DeepCopy()
			other.Labels = map[string]string{"owner": "someone-else"}
			if err := s.Update(ctx, other); err != nil {
				return err
			}
		}
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		cur.Labels["tier"] = "gold"
		return s.Update(ctx, &cur)
	})
	var got virtkit.VirtualMachine
	_ = s.Get(ctx, store.KeyOf(vm), &got)
	fmt.Println(err, attempts, got.Labels)
	// Output:
	// <nil> 2 map[owner:someone-else tier:gold]
}
