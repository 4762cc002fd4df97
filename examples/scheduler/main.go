// Command scheduler composes a custom placement policy from the default
// scheduler's plugins and one of its own: tier=gold VMIs go to tier=gold
// nodes and only they do, and VMIs are packed onto the fullest node that
// fits instead of spread.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/scheduler"
)

// goldTier keeps gold VMIs on gold nodes and the others off them.
func goldTier(_ context.Context, _ *scheduler.CycleState, vmi *virtkit.VirtualMachineInstance, n *scheduler.NodeInfo) *scheduler.Status {
	if (vmi.Labels["tier"] == "gold") != (n.Node.Labels["tier"] == "gold") {
		return scheduler.NewStatus(scheduler.Unschedulable, "node(s) were of another tier")
	}
	return nil
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	// The default profile plus goldTier, packing instead of spreading.
	p := scheduler.DefaultProfile(scheduler.Options{}).WithoutScore(scheduler.NameNodeResourcesFit)
	p.Filters = append(p.Filters, scheduler.NewFilter("GoldTier", goldTier))
	p.Scores = append(p.Scores, &scheduler.NodeResourcesFit{Strategy: scheduler.MostAllocated})
	sched, err := scheduler.NewFramework(p, scheduler.Options{})
	if err != nil {
		return err
	}
	c, err := cluster.New(cluster.Options{
		NodeNames: []string{"node-a", "node-b", "node-gold"},
		NodeLabels: func(name string) map[string]string {
			if name == "node-gold" {
				return map[string]string{"tier": "gold"}
			}
			return nil
		},
		Scheduler: sched,
	})
	if err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = c.Start(runCtx) }()

	for i, tier := range []string{"gold", "bronze", "bronze", "gold"} {
		name := fmt.Sprintf("vmi-%d", i)
		if err := c.Apply(ctx, newVMI(name, tier)); err != nil {
			return err
		}
		vmi, err := c.WaitForVMI(ctx, "default", name, cluster.VMIPhase(virtkit.Running))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s (tier %s) -> %s\n", name, tier, vmi.Status.NodeName)
	}
	return nil
}

func newVMI(name, tier string) *virtkit.VirtualMachineInstance {
	mem := resource.MustParse("128Mi")
	return &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"tier": tier}},
		Spec:       virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: &mem}}},
	}
}
