package scheduler_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/scheduler"
)

// binPack is a user's score plugin: the fuller the node's memory after
// placement, the better (the default spreads instead).
type binPack struct{}

func (binPack) Name() string { return "BinPack" }

func (binPack) Score(_ context.Context, state *scheduler.CycleState, vmi *virtkit.VirtualMachineInstance, n *scheduler.NodeInfo) (float64, *scheduler.Status) {
	if n.Allocatable.Memory == 0 {
		return 0, nil
	}
	used := n.Requested.Memory + scheduler.RequestsOf(vmi).Memory
	return 100 * float64(used) / float64(n.Allocatable.Memory), nil
}

// A custom score plugin joins the default profile: every built-in filter
// (readiness, taints, fit, affinity) still applies, and the user's score
// outweighs the default least-allocated one.
func ExampleNewFramework() {
	opts := scheduler.Options{}
	profile := scheduler.DefaultProfile(opts)
	profile.Scores = append(profile.Scores, binPack{})
	profile.Weights = map[string]float64{"BinPack": 3}
	fw, err := scheduler.NewFramework(profile, opts)
	if err != nil {
		fmt.Println(err)
		return
	}

	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm2"}}
	vmi.Spec.Domain.Resources.Requests = virtkit.ResourceList{virtkit.ResourceMemory: resource.MustParse("2Gi")}
	placed := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"}}
	placed.Spec.Domain.Resources.Requests = vmi.Spec.Domain.Resources.Requests
	placed.Status.NodeName, placed.Status.Phase = "b", virtkit.Running

	drain := virtkit.Taint{Key: "kubevirt.io/drain", Effect: virtkit.TaintEffectNoSchedule}
	nodes := []virtkit.Node{node("a", "16Gi"), node("b", "16Gi"), node("c", "16Gi", drain)}

	packed, _ := fw.Schedule(context.Background(), vmi, nodes, []*virtkit.VirtualMachineInstance{placed})
	spread, _ := scheduler.New(opts).Schedule(context.Background(), vmi, nodes, []*virtkit.VirtualMachineInstance{placed})
	fmt.Println("bin packing:", packed)
	fmt.Println("default:", spread)
	// Output:
	// bin packing: b
	// default: a
}
