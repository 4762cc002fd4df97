package cluster_test

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/network"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// nodeNetLog records, across the nodes' host networkers, what each node
// did to its host, in order.
type nodeNetLog struct {
	mu      sync.Mutex
	entries []string
	st      store.Store
	// startedBeforeStandby notes a standby copy made after the migration
	// had started (it must be made before).
	startedBeforeStandby []string
}

func (l *nodeNetLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, s)
}

func (l *nodeNetLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.entries...)
}

type nodeNet struct {
	node string
	log  *nodeNetLog
}

func (h nodeNet) EnsureBridge(context.Context, network.Bridge) error { return nil }
func (h nodeNet) VLANPort(context.Context, string, string, int) error {
	return nil
}
func (h nodeNet) VLANInterface(context.Context, string, string, int, netip.Prefix) error {
	return nil
}
func (h nodeNet) SetDHCPHost(context.Context, network.DHCP, string, netip.Addr) error { return nil }

func (h nodeNet) EnsureMasquerade(ctx context.Context, m network.Masquerade) error {
	if m.Standby {
		list := &virtkit.VirtualMachineInstanceList{}
		if err := h.log.st.List(ctx, list, store.ListOptions{}); err != nil {
			return err
		}
		for _, v := range list.Items {
			if ms := v.Status.MigrationState; ms != nil && ms.StartTimestamp != nil {
				h.log.mu.Lock()
				h.log.startedBeforeStandby = append(h.log.startedBeforeStandby, v.Name)
				h.log.mu.Unlock()
			}
		}
	}
	h.log.add(fmt.Sprintf("%s ensure %s standby=%v %s", h.node, m.ID, m.Standby, m.PodAddress))
	return nil
}

func (h nodeNet) ActivateMasquerade(_ context.Context, m network.Masquerade) error {
	h.log.add(fmt.Sprintf("%s activate %s", h.node, m.ID))
	return nil
}

func (h nodeNet) RemoveMasquerade(_ context.Context, id string) error {
	h.log.add(fmt.Sprintf("%s remove %s", h.node, id))
	return nil
}

// A live migration with node agents that each have their own host
// networking: the target prepares its copy of the guest's masquerade NAT
// (standby) before the migration starts, the domain it receives attaches
// to that copy, it activates the copy once the guest runs there, and the
// source removes its own copy; the address stays.
func TestPodNetworkMigrationEachNodePreparesItsSide(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := store.NewMemory()
	log := &nodeNetLog{st: st}
	c, err := cluster.New(cluster.Options{Store: st, NodeNames: []string{"node-a", "node-b"},
		PodNetwork: &cluster.PodNetwork{Range: netip.MustParsePrefix("10.250.0.0/16"),
			Host: func(n string) network.HostNetworker { return nodeNet{node: n, log: log} }}})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() { stop(); require.NoError(t, <-done) }()

	require.NoError(t, c.Apply(ctx, newVMIObj("mig1")))
	vmi, err := c.WaitForVMI(ctx, "default", "mig1", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning() && v.IsMigratable()
	})
	require.NoError(t, err)
	src := vmi.Status.NodeName
	dst := map[string]string{"node-a": "node-b", "node-b": "node-a"}[src]
	leases, err := (&network.IPAM{Store: st}).OwnedBy(ctx, string(vmi.UID))
	require.NoError(t, err)
	require.Len(t, leases, 1)
	addr := leases[0].Spec.Address

	mig, err := actions.Migrate(ctx, st, store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	got, err := c.WaitForMigration(ctx, mig.Namespace, mig.Name, func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool {
		return found && m.IsFinal()
	})
	require.NoError(t, err)
	require.Equal(t, virtkit.MigrationSucceeded, got.Status.Phase)
	after, err := c.WaitForVMI(ctx, "default", "mig1", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName == dst
	})
	require.NoError(t, err)

	var srcID, dstID string
	require.Eventually(t, func() bool {
		srcID, dstID = "", ""
		entries := log.all()
		order := map[string]int{}
		for i, e := range entries {
			f := strings.Fields(e)
			switch {
			case f[0] == src && f[1] == "ensure" && f[3] == "standby=false":
				srcID = f[2]
			case f[0] == dst && f[1] == "ensure" && f[3] == "standby=true":
				dstID = f[2]
				assert.Equal(t, addr, f[4], "the target's copy holds the VMI's address")
			}
			order[strings.Join(f[:2], " ")] = i
		}
		_, activated := order[dst+" activate"]
		_, removed := order[src+" remove"]
		return srcID != "" && dstID != "" && activated && removed
	}, 10*time.Second, 20*time.Millisecond, "%q", log.all())
	assert.NotEqual(t, srcID, dstID, "each node has its own copy")
	assert.Contains(t, log.all(), dst+" activate "+dstID)
	assert.Contains(t, log.all(), src+" remove "+srcID)
	assert.NotContains(t, log.all(), dst+" remove "+dstID)
	assert.Empty(t, log.startedBeforeStandby, "the target prepared before the migration started")

	// The target's domain attaches to the target's copy.
	x, err := c.Node(dst).Hypervisor.XML(ctx, node.DomainName("default", "mig1"))
	require.NoError(t, err)
	assert.Contains(t, x, "vkm"+dstID)
	assert.NotContains(t, x, "vkm"+srcID)
	raw := after.Annotations[node.MigrationTargetNetworksAnnotation]
	require.NotEmpty(t, raw)
	assert.Contains(t, raw, "vkm"+dstID)

	leases, err = (&network.IPAM{Store: st}).OwnedBy(ctx, string(vmi.UID))
	require.NoError(t, err)
	require.Len(t, leases, 1)
	assert.Equal(t, addr, leases[0].Spec.Address, "the address stays")
	assert.Equal(t, dst, leases[0].Spec.Node, "the lease now names the target")
}
