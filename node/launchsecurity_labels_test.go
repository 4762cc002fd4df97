package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// The agent labels its Node with the confidential-guest platforms its
// hypervisor reports, as KubeVirt's node labeller does; where the
// hypervisor cannot tell, the labels the node was given stand.
func TestAgentLabelsLaunchSecurity(t *testing.T) {
	for _, tc := range []struct {
		name     string
		platform *hypervisor.LaunchSecurity
		given    map[string]string
		want     map[string]bool
	}{
		{name: "SEV and SEV-ES", platform: &hypervisor.LaunchSecurity{SEV: true, SEVES: true},
			want: map[string]bool{virtkit.SEVLabel: true, virtkit.SEVESLabel: true, virtkit.SEVSNPLabel: false, virtkit.TDXLabel: false}},
		{name: "TDX", platform: &hypervisor.LaunchSecurity{TDX: true},
			want: map[string]bool{virtkit.SEVLabel: false, virtkit.TDXLabel: true}},
		{name: "a label the platform does not back is removed", platform: &hypervisor.LaunchSecurity{},
			given: map[string]string{virtkit.SEVLabel: "true"},
			want:  map[string]bool{virtkit.SEVLabel: false}},
		{name: "a host that cannot tell keeps the labels it was given",
			given: map[string]string{virtkit.SEVSNPLabel: "true"},
			want:  map[string]bool{virtkit.SEVSNPLabel: true, virtkit.SEVLabel: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := store.NewMemory()
			hv := sim.New(sim.Options{Name: nodeName, LaunchSecurity: tc.platform})
			startAgent(t, node.Options{NodeName: nodeName, Store: mem, Hypervisor: hv, Labels: tc.given,
				HeartbeatInterval: 50 * time.Millisecond})
			n := &virtkit.Node{}
			require.Eventually(t, func() bool {
				return mem.Get(context.Background(), store.Key{Name: nodeName}, n) == nil && n.Status.LastHeartbeatTime != nil
			}, 10*time.Second, 10*time.Millisecond)
			for key, on := range tc.want {
				_, has := n.Labels[key]
				assert.Equal(t, on, has, "label %s", key)
			}
		})
	}
}
