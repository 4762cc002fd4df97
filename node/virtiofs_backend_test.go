package node_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// daemonShares hides the simulator's own virtiofs model, so the node
// takes the path of a real host and starts virtiofsd per share.
type daemonShares struct{ hypervisor.Hypervisor }

// TestVirtiofsSimulated: on the simulated host a share is modelled by the
// hypervisor, not served by a host daemon: no virtiofsd is looked for or
// started (the binary configured does not exist), the share's files are
// written, the sim serves the directory under the share's tag, and the
// share ends with the domain.
func TestVirtiofsSimulated(t *testing.T) {
	ctx := context.Background()
	st, hv := store.NewMemory(), sim.New(sim.Options{Name: nodeName})
	runDir := t.TempDir()
	runAgent(t, st, hv, func(o *node.Options) {
		o.Domain.RuntimeDir = runDir
		o.Virtiofs.Binary = filepath.Join(t.TempDir(), "no-virtiofsd")
	})
	vmi := newSharingVMI(t, st, "simshare")
	running := eventuallyPhase(t, st, "simshare", virtkit.Running)
	dom := domain.DomainName(vmi)

	shares, err := domain.Shares(ctx, running, domain.Options{RuntimeDir: runDir, ConfigResolver: node.StoreConfig{Store: st}})
	require.NoError(t, err)
	require.Len(t, shares, 1)
	assert.Equal(t, map[string]string{"app": shares[0].Dir}, hv.VirtiofsShares(dom))
	got, err := os.ReadFile(filepath.Join(shares[0].Dir, "greeting"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
	assert.NoFileExists(t, shares[0].Socket+".pid", "no virtiofsd runs")
	assert.NoFileExists(t, shares[0].Socket)

	require.NoError(t, st.Delete(ctx, running, store.DeleteOptions{}))
	require.Eventually(t, func() bool { _, ok := getVMI(t, st, "simshare"); return !ok }, 15*time.Second, 20*time.Millisecond)
	assert.Empty(t, hv.VirtiofsShares(dom))
}
