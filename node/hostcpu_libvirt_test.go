//go:build libvirt && cgo

package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/store"
)

// On libvirt's test driver (no domain capabilities, no host CPU model) the
// agent registers a Ready Node without CPU labels: migrations from it are
// not CPU-filtered.
func TestAgentPublishesNoCPULabelsOnLibvirtTestDriver(t *testing.T) {
	h, err := libvirt.New(context.Background(), libvirt.Options{URI: libvirttest.TestURI})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	st := store.NewMemory()
	runAgent(t, st, h, nil)
	n := &virtkit.Node{}
	require.Eventually(t, func() bool {
		return st.Get(context.Background(), store.Key{Name: nodeName}, n) == nil &&
			virtkit.IsConditionTrue(n.Status.Conditions, virtkit.NodeReady)
	}, 20*time.Second, 20*time.Millisecond)
	for k := range n.Labels {
		assert.NotContains(t, k, "cpu", "no CPU label on a test-driver node")
	}
	assert.NotContains(t, n.Labels, virtkit.HostCPUSourceLabel)
}
