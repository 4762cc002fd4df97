package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// An audit log of a VMI's life: store.WatchChanges hands over every change
// with the state before and after, so the log holds each phase the store
// recorded (its phaseTransitionTimestamps grow by every phase passed, even
// several in one write), which a reconciler that only gets a key and
// re-reads the object cannot promise.
func Example_auditLog() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := store.NewMemory()
	c, err := cluster.New(cluster.Options{Store: st, Nodes: 1})
	if err != nil {
		panic(err)
	}
	go func() { _ = c.Start(ctx) }()

	// Start the log at the store's current version: nothing after it is
	// missed, whenever the watch gets going.
	var vmis virtkit.VirtualMachineInstanceList
	if err := st.List(ctx, &vmis, store.ListOptions{}); err != nil {
		panic(err)
	}
	audit := make(chan string, 64)
	go func() {
		_ = store.WatchChanges(ctx, st, &virtkit.VirtualMachineInstanceList{},
			store.ChangeOptions{ResourceVersion: vmis.ResourceVersion},
			func(ch store.Change) error {
				var before []virtkit.VirtualMachineInstancePhaseTransitionTimestamp
				if ch.Old != nil {
					before = ch.Old.(*virtkit.VirtualMachineInstance).Status.PhaseTransitionTimestamps
				}
				if ch.New == nil {
					audit <- fmt.Sprintf("%s: deleted", store.KeyOf(ch.Old))
					return store.StopWatching()
				}
				for _, t := range ch.New.(*virtkit.VirtualMachineInstance).Status.PhaseTransitionTimestamps[len(before):] {
					audit <- fmt.Sprintf("%s: %s", store.KeyOf(ch.New), t.Phase)
				}
				return nil
			})
		close(audit)
	}()

	objs, err := virtkit.Decode(strings.NewReader(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: web, namespace: default}
spec:
  domain:
    devices: {}
    memory: {guest: 64Mi}
`))
	if err != nil {
		panic(err)
	}
	if err := c.Apply(ctx, objs...); err != nil {
		panic(err)
	}
	if _, err := c.WaitForVMI(ctx, "default", "web", cluster.VMIPhaseIs(virtkit.Running)); err != nil {
		panic(err)
	}
	// A delete stops the guest through ACPI: it powers off within its
	// grace period and ends Succeeded.
	if err := st.Delete(ctx, objs[0], store.DeleteOptions{}); err != nil {
		panic(err)
	}
	for line := range audit {
		fmt.Println(line)
	}
	// Output:
	// default/web: Pending
	// default/web: Scheduling
	// default/web: Scheduled
	// default/web: Running
	// default/web: Succeeded
	// default/web: deleted
}
