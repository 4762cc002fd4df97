package controller_test

import (
	"context"
	"fmt"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// A node agent stops posting heartbeats: after the monitor grace period
// the node is not ready, after the unresponsive grace its VMIs fail and
// are released for the VM controller to replace.
func ExampleNodeHealthReconciler() {
	ctx := context.Background()
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	clock := testingclock.NewFakePassiveClock(now)
	st, _ := store.NewMemoryWithOptions(store.Options{Clock: clock})

	hb := metav1.NewTime(now)
	_ = st.Create(ctx, &virtkit.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "host-1"},
		Status: virtkit.NodeStatus{LastHeartbeatTime: &hb,
			Conditions: []virtkit.Condition{{Type: virtkit.NodeReady, Status: virtkit.ConditionTrue}}},
	})
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web",
		Finalizers: []string{virtkit.NodeAgentFinalizer}}}
	_ = st.Create(ctx, vmi)
	vmi.Status = virtkit.VirtualMachineInstanceStatus{Phase: virtkit.Running, NodeName: "host-1"}
	_ = st.UpdateStatus(ctx, vmi)

	r, _ := controller.NewNodeHealthReconciler(controller.NodeHealthOptions{
		Store: st, Clock: clock, MonitorGracePeriod: 40 * time.Second, UnresponsiveGracePeriod: time.Minute,
	})
	show := func() {
		n, v := &virtkit.Node{}, &virtkit.VirtualMachineInstance{}
		_ = st.Get(ctx, store.Key{Name: "host-1"}, n)
		_ = st.Get(ctx, store.Key{Namespace: "default", Name: "web"}, v)
		ready := virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady)
		fmt.Printf("node ready=%v; vmi %s %s finalizers=%v\n", ready, v.Status.Phase, v.Status.Reason, v.Finalizers)
	}
	for _, step := range []time.Duration{0, 45 * time.Second, time.Minute} {
		now = now.Add(step)
		clock.SetTime(now)
		res, _ := r.Reconcile(ctx, reconcile.Request{Name: "host-1"})
		show()
		fmt.Println("  look again in", res.RequeueAfter)
	}
	// Output:
	// node ready=true; vmi Running  finalizers=[virtkit.io/node-agent]
	//   look again in 41s
	// node ready=false; vmi Running  finalizers=[virtkit.io/node-agent]
	//   look again in 56s
	// node ready=false; vmi Failed NodeUnresponsive finalizers=[]
	//   look again in 0s
}
