package cluster_test

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// The zero-value cluster live-migrates: its simulated hosts share one
// network, and its pod network interface defaults to masquerade, so a VM
// built in Go without any interface can move.
func Example_migrate() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	go func() { _ = c.Start(ctx) }()

	running := virtkit.RunStrategyAlways
	vm := &virtkit.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &running,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{Spec: virtkit.VirtualMachineInstanceSpec{
				Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: ptr(resource.MustParse("256Mi"))}},
			}},
		},
	}
	if err := c.Apply(ctx, vm); err != nil {
		fmt.Println(err)
		return
	}
	vmi, err := c.WaitForVMI(ctx, "default", "web", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning() && virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	from := vmi.Status.NodeName
	fmt.Println("interface binding is masquerade:", vmi.Spec.Domain.Devices.Interfaces[0].Masquerade != nil)

	mig := &virtkit.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Name: "move-web"},
		Spec:       virtkit.VirtualMachineInstanceMigrationSpec{VMIName: "web"},
	}
	if err := c.Apply(ctx, mig); err != nil {
		fmt.Println(err)
		return
	}
	done, err := cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "move-web"},
		func() *virtkit.VirtualMachineInstanceMigration { return &virtkit.VirtualMachineInstanceMigration{} },
		&virtkit.VirtualMachineInstanceMigrationList{},
		func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool { return found && m.IsFinal() })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("migration:", done.Status.Phase)
	vmi, err = c.WaitForVMI(ctx, "default", "web", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName != from && v.IsRunning()
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("moved to the other node:", vmi.Status.NodeName != from)
	// Output:
	// interface binding is masquerade: true
	// migration: Succeeded
	// moved to the other node: true
}
