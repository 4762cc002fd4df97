// Command scheduler plugs a custom placement policy into virtkit: every
// VMI labelled tier=gold goes to the node labelled tier=gold, everything
// else is packed onto the first node that is Ready (bin-packing, the
// opposite of the default's least-allocated spreading).
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/scheduler"
)

// goldOrPack is the custom policy, as a scheduler.Func.
func goldOrPack(_ context.Context, vmi *virtkit.VirtualMachineInstance, nodes []virtkit.Node, _ []*virtkit.VirtualMachineInstance) (string, error) {
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	gold := vmi.Labels["tier"] == "gold"
	for _, n := range nodes {
		if !virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady) || n.Spec.Unschedulable {
			continue
		}
		if gold == (n.Labels["tier"] == "gold") {
			return n.Name, nil
		}
	}
	return "", fmt.Errorf("no node for tier %q: %w", vmi.Labels["tier"], scheduler.ErrUnschedulable)
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	c, err := cluster.New(cluster.Options{
		NodeNames: []string{"node-a", "node-b", "node-gold"},
		NodeLabels: func(name string) map[string]string {
			if name == "node-gold" {
				return map[string]string{"tier": "gold"}
			}
			return nil
		},
		Scheduler: scheduler.Func(goldOrPack),
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
		vmi, err := c.WaitForVMI(ctx, "default", name, cluster.VMIPhaseIs(virtkit.Running))
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
