//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
)

// loadVMIManifest reads a manifest of testdata and returns its objects and
// the VMI among them.
func loadVMIManifest(t *testing.T, path string) ([]virtkit.Object, *virtkit.VirtualMachineInstance) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	objs, err := virtkit.DecodeBytes(data)
	require.NoError(t, err)
	var vmi *virtkit.VirtualMachineInstance
	for _, o := range objs {
		if v, ok := o.(*virtkit.VirtualMachineInstance); ok {
			vmi = v
		}
	}
	require.NotNil(t, vmi, "%s holds no VirtualMachineInstance", path)
	return objs, vmi
}

// bootVMI removes a guest an interrupted run left behind under the VMI's
// domain name, applies objs, waits until the VMI runs with its guest agent
// connected, and returns it with a client of that agent.
func bootVMI(ctx context.Context, t *testing.T, c *cluster.Cluster, vmi *virtkit.VirtualMachineInstance, objs ...virtkit.Object) (*virtkit.VirtualMachineInstance, guest) {
	t.Helper()
	hv := c.Nodes()[0].Hypervisor // the cluster's one node
	if err := hv.Destroy(ctx, domain.DomainName(vmi)); err == nil {
		t.Logf("destroyed a leftover %s", domain.DomainName(vmi))
	}
	_ = hv.Undefine(ctx, domain.DomainName(vmi))

	start := time.Now()
	require.NoError(t, c.Apply(ctx, objs...))
	bctx, bcancel := context.WithTimeout(ctx, bootTimeout)
	got, err := c.WaitForVMI(bctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && (v.IsFinal() || v.IsRunning() &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected))
	})
	bcancel()
	require.NoError(t, err, "the Debian guest boots and its agent answers")
	require.False(t, got.IsFinal(), "VMI ended: %s: %s", got.Status.Phase, got.Status.Reason)
	t.Logf("boot to guest agent: %s", time.Since(start).Round(100*time.Millisecond))

	opts := guestagent.Options{CallTimeout: 30 * time.Second}
	ac := hv.(hypervisor.AgentCommander)
	return got, guest{c: guestagent.New(guestagent.NewPassthroughTransport(ac, domain.DomainName(got), opts), opts)}
}
