package scheduler_test

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/scheduler"
)

func node(name, mem string, taints ...virtkit.Taint) virtkit.Node {
	return virtkit.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       virtkit.NodeSpec{Taints: taints},
		Status: virtkit.NodeStatus{
			Allocatable: virtkit.ResourceList{virtkit.ResourceCPU: resource.MustParse("4"), virtkit.ResourceMemory: resource.MustParse(mem)},
			Conditions:  []virtkit.Condition{{Type: virtkit.NodeReady, Status: virtkit.ConditionTrue}},
		},
	}
}

func ExampleDefault_Schedule() {
	vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"}}
	vmi.Spec.Domain.Resources.Requests = virtkit.ResourceList{virtkit.ResourceMemory: resource.MustParse("4Gi")}

	drain := virtkit.Taint{Key: "kubevirt.io/drain", Effect: virtkit.TaintEffectNoSchedule}
	nodes := []virtkit.Node{node("small", "2Gi"), node("big", "16Gi"), node("draining", "16Gi", drain)}

	s := scheduler.New(scheduler.Options{})
	name, err := s.Schedule(context.Background(), vmi, nodes, nil)
	fmt.Println(name, err)

	_, err = s.Schedule(context.Background(), vmi, nodes[:1], nil)
	fmt.Println(errors.Is(err, scheduler.ErrUnschedulable), err)
	// Output:
	// big <nil>
	// true 0/1 nodes are available: 1 Insufficient memory.
}
