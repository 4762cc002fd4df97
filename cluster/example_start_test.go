package cluster_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// A VirtualMachine written as Go structs, stored halted, started the way
// `virtctl start` starts it, and waited for: the whole control plane (a
// memory store, the built-in controllers, two simulated hosts) runs in
// this process.
func Example_startVM() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	c, err := cluster.New(cluster.Options{}) // memory store, two simulated hosts
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); <-done }()

	halted := virtkit.RunStrategyHalted
	memory := resource.MustParse("512Mi")
	vm := &virtkit.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &halted,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{
				Spec: virtkit.VirtualMachineInstanceSpec{
					Domain: virtkit.DomainSpec{
						Memory: &virtkit.Memory{Guest: &memory},
						Devices: virtkit.Devices{Disks: []virtkit.Disk{{
							Name:       "root",
							DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusVirtio}},
						}}},
					},
					Volumes: []virtkit.Volume{{
						Name: "root",
						VolumeSource: virtkit.VolumeSource{
							ContainerDisk: &virtkit.ContainerDiskSource{Image: "quay.io/containerdisks/fedora:latest"},
						},
					}},
				},
			},
		},
	}
	// Apply defaults, validates and admits, as the API server would.
	if err := c.Apply(ctx, vm); err != nil {
		fmt.Println(err)
		return
	}

	key := store.Key{Namespace: "default", Name: "hello"}
	if err := actions.Start(ctx, c.Store(), key, actions.StartOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	vmi, err := c.WaitForVMI(ctx, "default", "hello", cluster.VMIPhaseIs(virtkit.Running))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("VMI", vmi.Name, vmi.Status.Phase, "on a node:", vmi.Status.NodeName != "")
	got, err := c.WaitForVM(ctx, "default", "hello", cluster.VMPrintableStatusIs(virtkit.VirtualMachineStatusRunning))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("VM", got.Name, got.Status.PrintableStatus)
	// Output:
	// VMI hello Running on a node: true
	// VM hello Running
}
