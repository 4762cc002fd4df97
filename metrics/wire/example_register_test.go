package wire_test

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/metrics/wire"
)

// RegisterCluster puts a whole embedded cluster's metrics, under
// KubeVirt's names, into a registry of the caller's: here one running VMI
// on simulated hosts. Serve the registry with metrics.Handler (or use
// wire.ClusterHandler, which streams the per-VMI families).
func ExampleRegisterCluster() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); <-done }()

	memory := resource.MustParse("1Gi")
	if err := c.Apply(ctx, &virtkit.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec:       virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &memory}}},
	}); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := c.WaitForVMI(ctx, "default", "web", cluster.VMIPhaseIs(virtkit.Running)); err != nil {
		fmt.Println(err)
		return
	}

	reg := prometheus.NewPedanticRegistry()
	if err := wire.RegisterCluster(reg, c, metrics.Options{}); err != nil {
		fmt.Println(err)
		return
	}
	families, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range families {
		if f.GetName() != "kubevirt_vmi_memory_domain_bytes" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			fmt.Printf("%s{namespace=%q,name=%q} %g\n", f.GetName(), labels["namespace"], labels["name"], m.GetGauge().GetValue())
		}
	}
	// Output: kubevirt_vmi_memory_domain_bytes{namespace="default",name="web"} 1.073741824e+09
}
