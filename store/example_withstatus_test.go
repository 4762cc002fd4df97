package store_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// A hand-off that changes metadata and status (a label and the node the
// VMI was placed on) in one write: watchers see one event, never the label
// without the status.
func ExampleUpdateWithStatus() {
	ctx := context.Background()
	st := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a"}}
	if err := st.Create(ctx, vmi); err != nil {
		panic(err)
	}
	before := vmi.ResourceVersion
	vmi.Labels = map[string]string{virtkit.NodeNameLabel: "node-1"}
	vmi.Status.NodeName = "node-1"
	vmi.Status.Phase = virtkit.Scheduled
	if err := store.UpdateWithStatus(ctx, st, vmi); err != nil {
		panic(err)
	}
	got := &virtkit.VirtualMachineInstance{}
	if err := st.Get(ctx, store.KeyOf(vmi), got); err != nil {
		panic(err)
	}
	fmt.Println(got.Labels[virtkit.NodeNameLabel], got.Status.NodeName, got.Status.Phase)
	fmt.Println("resourceVersion moved:", before != got.ResourceVersion)
	// Output:
	// node-1 node-1 Scheduled
	// resourceVersion moved: true
}
