package actions_test

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

// Pause records the request on the VMI; the node agent running it pauses
// the domain. A VMI that is not running refuses with ErrConflictingAction.
func ExamplePause() {
	ctx := context.Background()
	st := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "vm1"}}
	if err := st.Create(ctx, vmi); err != nil {
		panic(err)
	}
	key := store.Key{Namespace: "demo", Name: "vm1"}

	err := actions.Pause(ctx, st, key)
	fmt.Println(errors.Is(err, actions.ErrConflictingAction), err)

	vmi.Status.Phase = virtkit.Running
	if err := st.UpdateStatus(ctx, vmi); err != nil {
		panic(err)
	}
	if err := actions.Pause(ctx, st, key); err != nil {
		panic(err)
	}
	if err := st.Get(ctx, key, vmi); err != nil {
		panic(err)
	}
	fmt.Println(virtkit.PauseRequestAnnotation, "=", vmi.Annotations[virtkit.PauseRequestAnnotation])
	// Output:
	// true conflicting action: VM is not running
	// virtkit.io/pause-request = true
}
