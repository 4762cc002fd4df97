package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// TestMultiProcessLiveMigration runs a controller and two `virtkit node
// --hypervisor sim` processes on a real etcd and live-migrates a VM from
// the node it runs on to the other: the guest's pages cross a TCP
// connection between the two node processes.
func TestMultiProcessLiveMigration(t *testing.T) {
	c := newCluster(t)
	c.startController("c1")
	nodes := []string{"node-a", "node-b"}
	for _, n := range nodes {
		c.startNode(n)
	}
	c.waitFor("two ready nodes that take migrations", 30*time.Second, func() (bool, string) {
		var state []string
		ok := true
		for _, name := range nodes {
			n := &virtkit.Node{}
			if err := c.st.Get(t.Context(), store.Key{Name: name}, n); err != nil {
				return false, err.Error()
			}
			_, unsupported := n.Annotations[virtkit.MigrationUnsupportedAnnotation]
			ready := virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady)
			ok = ok && ready && !unsupported
			state = append(state, fmt.Sprintf("%s ready=%v unsupported=%v", name, ready, unsupported))
		}
		return ok, strings.Join(state, "; ")
	})

	dir := c.dir
	vmPath := filepath.Join(dir, "vm.yaml")
	require.NoError(t, os.WriteFile(vmPath, []byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: mover
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        memory:
          guest: 64Mi
        devices:
          interfaces:
          - name: default
            masquerade: {}
      networks:
      - name: default
        pod: {}
`), 0o644))
	c.run("apply", "-f", vmPath, "--store", c.store)
	var source string
	c.waitFor("the VMI running", 60*time.Second, func() (bool, string) {
		vmi := &virtkit.VirtualMachineInstance{}
		if err := c.st.Get(t.Context(), store.Key{Namespace: "default", Name: "mover"}, vmi); err != nil {
			return false, err.Error()
		}
		source = vmi.Status.NodeName
		return vmi.Status.Phase == virtkit.Running && source != "", fmt.Sprintf("phase %s on %q", vmi.Status.Phase, source)
	})
	target := nodes[0]
	if source == target {
		target = nodes[1]
	}

	migPath := filepath.Join(dir, "migration.yaml")
	require.NoError(t, os.WriteFile(migPath, []byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceMigration
metadata:
  name: move-mover
spec:
  vmiName: mover
`), 0o644))
	c.run("apply", "-f", migPath, "--store", c.store)

	c.waitFor("the migration to succeed", 90*time.Second, func() (bool, string) {
		m := &virtkit.VirtualMachineInstanceMigration{}
		if err := c.st.Get(t.Context(), store.Key{Namespace: "default", Name: "move-mover"}, m); err != nil {
			return false, err.Error()
		}
		if m.Status.Phase == virtkit.MigrationFailed {
			t.Fatalf("migration failed: %+v", m.Status)
		}
		return m.Status.Phase == virtkit.MigrationSucceeded, string(m.Status.Phase)
	})
	var vmi *virtkit.VirtualMachineInstance
	c.waitFor("the VMI to report the completed migration", 30*time.Second, func() (bool, string) {
		vmi = &virtkit.VirtualMachineInstance{}
		require.NoError(t, c.st.Get(t.Context(), store.Key{Namespace: "default", Name: "mover"}, vmi))
		ms := vmi.Status.MigrationState
		if ms == nil {
			return false, "no migrationState"
		}
		return ms.Completed && vmi.Status.NodeName == target && vmi.Status.Phase == virtkit.Running,
			fmt.Sprintf("completed=%v failed=%v node=%s phase=%s", ms.Completed, ms.Failed, vmi.Status.NodeName, vmi.Status.Phase)
	})
	ms := vmi.Status.MigrationState
	assert.False(t, ms.Failed)
	assert.Equal(t, source, ms.SourceNode)
	assert.Equal(t, target, ms.TargetNode)
	assert.True(t, strings.HasPrefix(ms.TargetNodeAddress, "tcp://127.0.0.1:"), "the target's listener: %q", ms.TargetNodeAddress)
	assert.Equal(t, c.node(target).Annotations[node.MigrationURIAnnotation], ms.TargetNodeAddress)

	// The guest really moved between the processes: the target's host
	// runs it (its state file says so), the source's does not.
	dom := node.DomainName("default", "mover")
	c.waitFor("the guest running on the target host only", 30*time.Second, func() (bool, string) {
		active := map[string]bool{}
		for _, n := range nodes {
			doms, err := sim.ReadState(c.statePath(n))
			require.NoError(t, err)
			for _, d := range doms {
				if d.Name == dom && d.State.IsActive() {
					active[n] = true
				}
			}
		}
		return active[target] && !active[source], fmt.Sprintf("active on %v", active)
	})
	assert.True(t, c.procs[1].logHas("incoming migration") || c.procs[2].logHas("incoming migration"),
		"a node process logged the incoming TCP migration")
}
