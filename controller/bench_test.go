package controller

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
)

// BenchmarkVMReconcileSteady measures a VM reconcile that finds nothing to
// do (a running VM whose status is current): two store reads and the status
// computation.
func BenchmarkVMReconcileSteady(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("vms=%d", n), func(b *testing.B) {
			e := newEnv(b, 4)
			e.addNode("big", "100000", "100000Gi")
			for i := range n {
				require.NoError(b, e.st.Create(e.ctx, newVM(fmt.Sprintf("vm%d", i), virtkit.RunStrategyAlways)))
			}
			e.settle()
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.vm.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: fmt.Sprintf("vm%d", i%n)}); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reconciles/s")
		})
	}
}

// BenchmarkVMStartPath measures the control-plane work to bring one VM from
// creation to Running: VM reconcile (create VMI), VMI placement, the fake
// agent taking and running it, and the VM status updates, all on the memory
// store, with many VMs already placed.
func BenchmarkVMStartPath(b *testing.B) {
	for _, placed := range []int{0, 1000} {
		b.Run(fmt.Sprintf("placed=%d", placed), func(b *testing.B) {
			e := newEnv(b, 4)
			for i := range 4 {
				e.addNode(fmt.Sprintf("big%d", i), "100000", "100000Gi")
			}
			for i := range placed {
				require.NoError(b, e.st.Create(e.ctx, newVMI(fmt.Sprintf("bg%d", i), "1Mi")))
				_, err := e.vmi.Reconcile(e.ctx, reconcile.Request{Namespace: "default", Name: fmt.Sprintf("bg%d", i)})
				require.NoError(b, err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				name := fmt.Sprintf("vm%d", i)
				i++
				require.NoError(b, e.st.Create(e.ctx, newVM(name, virtkit.RunStrategyAlways)))
				req := reconcile.Request{Namespace: "default", Name: name}
				for range 3 {
					if _, err := e.vm.Reconcile(e.ctx, req); err != nil {
						b.Fatal(err)
					}
					if _, err := e.vmi.Reconcile(e.ctx, req); err != nil {
						b.Fatal(err)
					}
					if vmi := e.getVMI(name); vmi != nil {
						if err := e.agent.reconcile(e.ctx, vmi); err != nil {
							b.Fatal(err)
						}
					}
				}
				if e.getVM(name).Status.PrintableStatus != virtkit.VirtualMachineStatusRunning {
					b.Fatalf("%s not running: %s", name, e.getVM(name).Status.PrintableStatus)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "vms/s")
		})
	}
}
