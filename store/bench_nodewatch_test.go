package store_test

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// BenchmarkMemoryNodeWatchers: one VMI status write with 1,000 node agents
// watching VMIs by their node label (two watches each, as node.Agent
// does), against one with no watcher. The write concerns one node, so its
// cost should not grow with the number of nodes.
func BenchmarkMemoryNodeWatchers(b *testing.B) {
	for _, nodes := range []int{0, 1000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := store.NewMemory()
			for i := range nodes {
				for _, key := range []string{virtkit.NodeNameLabel, virtkit.MigrationTargetNodeNameLabel} {
					sel := labels.SelectorFromSet(labels.Set{key: fmt.Sprintf("node-%d", i)})
					ch, err := m.Watch(ctx, &virtkit.VirtualMachineInstanceList{}, store.WatchOptions{LabelSelector: sel, ReadOnly: true})
					if err != nil {
						b.Fatal(err)
					}
					go func() {
						for range ch { //nolint:revive // drain
						}
					}()
				}
			}
			vmi := &virtkit.VirtualMachineInstance{
				TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vmi", Labels: map[string]string{virtkit.NodeNameLabel: "node-7"}},
			}
			if err := m.Create(ctx, vmi); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				vmi.Status.Phase = virtkit.VirtualMachineInstancePhase(fmt.Sprintf("p%d", i%2))
				if err := m.UpdateStatus(ctx, vmi); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
