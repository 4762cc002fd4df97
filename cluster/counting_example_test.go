package cluster_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

func ExampleNewCountingStore() {
	ctx := context.Background()
	st := cluster.NewCountingStore(store.NewMemory())
	// Pass st as Options.Store to count what a whole cluster writes.
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm"}}
	if err := st.Create(ctx, vm); err != nil {
		fmt.Println(err)
		return
	}
	vm.Labels = map[string]string{"app": "web"}
	if err := st.Update(ctx, vm); err != nil {
		fmt.Println(err)
		return
	}
	if err := st.Update(ctx, vm); err != nil { // changes nothing
		fmt.Println(err)
		return
	}
	c := st.Counts()[virtkit.KindVirtualMachine]
	fmt.Println("writes:", c.Writes(), "creates:", c.Creates, "updates:", c.Updates, "no-ops:", c.NoOps)
	// Output: writes: 3 creates: 1 updates: 2 no-ops: 1
}
