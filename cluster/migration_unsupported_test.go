package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// A node that says it cannot take part in migrations makes a migration
// fail at once with its reason, whether it is the source or the only
// possible target.
func TestMigrationNodeUnsupported(t *testing.T) {
	for _, tc := range []struct {
		name        string
		unsupported string // node name
		source      string // where the VMI runs
		want        string
	}{
		{name: "source", unsupported: "node-1", source: "node-1", want: "source node node-1: no migration address"},
		{name: "only target", unsupported: "node-2", source: "node-1", want: "no target can receive it: node-2 (no migration address)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := cluster.New(cluster.Options{ConfigureNode: func(name string, o *node.Options) {
				if name == tc.unsupported {
					o.Migration.Unsupported = "no migration address"
				}
			}})
			require.NoError(t, err)
			go func() { _ = c.Start(ctx) }()

			_, err = cluster.WaitFor(ctx, c.Store(), store.Key{Name: tc.unsupported},
				func() *virtkit.Node { return &virtkit.Node{} }, &virtkit.NodeList{},
				func(n *virtkit.Node, found bool) bool {
					return found && n.Annotations[virtkit.MigrationUnsupportedAnnotation] == "no migration address"
				})
			require.NoError(t, err)

			vmi := &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: virtkit.VirtualMachineInstanceSpec{
					NodeSelector: map[string]string{virtkit.HostnameLabel: tc.source},
					Domain:       virtkit.DomainSpec{Memory: &virtkit.Memory{Guest: ptr(resource.MustParse("64Mi"))}},
				}}
			require.NoError(t, c.Apply(ctx, vmi))
			_, err = c.WaitForVMI(ctx, "default", "web", func(v *virtkit.VirtualMachineInstance, found bool) bool {
				return found && v.IsRunning() && virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable)
			})
			require.NoError(t, err)
			require.NoError(t, c.Apply(ctx, &virtkit.VirtualMachineInstanceMigration{
				ObjectMeta: metav1.ObjectMeta{Name: "move"}, Spec: virtkit.VirtualMachineInstanceMigrationSpec{VMIName: "web"}}))
			mig, err := cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "move"},
				func() *virtkit.VirtualMachineInstanceMigration { return &virtkit.VirtualMachineInstanceMigration{} },
				&virtkit.VirtualMachineInstanceMigrationList{},
				func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool { return found && m.IsFinal() })
			require.NoError(t, err)
			assert.Equal(t, virtkit.MigrationFailed, mig.Status.Phase)
			require.NotNil(t, mig.Status.MigrationState)
			assert.Contains(t, mig.Status.MigrationState.FailureReason, virtkit.MigrationReasonNodeUnsupported)
			assert.Contains(t, mig.Status.MigrationState.FailureReason, tc.want)
		})
	}
}
