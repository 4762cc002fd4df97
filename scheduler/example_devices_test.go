package scheduler_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/scheduler"
)

// A VMI with a GPU goes to the node that advertises the GPU's resource
// and has one free; while the node's only one is held, it waits.
func ExampleNodeDevices() {
	const t4 = "nvidia.com/TU104GL_Tesla_T4"
	gpuVMI := func(name string) *virtkit.VirtualMachineInstance {
		v := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
		v.Spec.Domain.Devices.GPUs = []virtkit.GPU{{Name: "gpu1", DeviceName: t4}}
		return v
	}
	withGPU := node("gpu-node", "16Gi")
	withGPU.Status.Allocatable[t4] = resource.MustParse("1")
	nodes := []virtkit.Node{node("plain", "16Gi"), withGPU}

	s := scheduler.New(scheduler.Options{})
	first := gpuVMI("first")
	name, err := s.Schedule(context.Background(), first, nodes, nil)
	fmt.Println(name, err)

	first.Status.NodeName, first.Status.Phase = name, virtkit.Running
	_, err = s.Schedule(context.Background(), gpuVMI("second"), nodes, []*virtkit.VirtualMachineInstance{first})
	fmt.Println(err)
	// Output:
	// gpu-node <nil>
	// 0/2 nodes are available: 2 Insufficient nvidia.com/TU104GL_Tesla_T4.
}
