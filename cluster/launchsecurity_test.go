package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/store"
)

// sevCluster runs a cluster of simulated hosts, the ones named in
// labelled carrying the kubevirt.io/sev label, the one named in modelled
// modelling that platform, and applies sevVMI.
func sevCluster(t *testing.T, names, labelled []string, models map[string]*hypervisor.LaunchSecurity) (*cluster.Cluster, map[string]*sim.Host, func(string, func(*virtkit.VirtualMachineInstance) bool)) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	clk := sim.NewVirtualClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	hosts := map[string]*sim.Host{}
	c, err := cluster.New(cluster.Options{
		Clock: clk, NoCommonInstancetypes: true, NodeNames: names,
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h := sim.New(sim.Options{Name: name, Clock: clk, LaunchSecurity: models[name]})
			hosts[name] = h
			return h, nil
		},
		NodeLabels: func(name string) map[string]string {
			for _, l := range labelled {
				if l == name {
					return map[string]string{virtkit.SEVLabel: "true"}
				}
			}
			return nil
		},
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	require.NoError(t, c.Settle(ctx))
	require.NoError(t, c.Apply(ctx, decodeAll(t, []byte(sevVMI))...))
	wait := func(what string, ok func(*virtkit.VirtualMachineInstance) bool) {
		t.Helper()
		for waited := time.Duration(0); ; waited += time.Second {
			v := &virtkit.VirtualMachineInstance{}
			require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "sev"}, v))
			if ok(v) {
				return
			}
			require.Less(t, waited, time.Minute, "waiting for %s: %+v", what, v.Status)
			require.NoError(t, c.Advance(ctx, time.Second))
		}
	}
	return c, hosts, wait
}

// A confidential VMI runs on the simulated node labelled as offering SEV
// (the simulator models no platform of its own: the label is the node's
// capability), with <launchSecurity type='sev'> in its domain.
func TestSEVVMIRunsOnTheLabelledNode(t *testing.T) {
	_, hosts, wait := sevCluster(t, []string{"plain", "sev"}, []string{"sev"}, nil)
	var node string
	wait("running", func(v *virtkit.VirtualMachineInstance) bool { node = v.Status.NodeName; return v.IsRunning() })
	require.Equal(t, "sev", node)
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = "default", "sev"
	xml, err := hosts["sev"].XML(context.Background(), domain.DomainName(vmi))
	require.NoError(t, err)
	assert.Contains(t, xml, `<launchSecurity type="sev">`)
	assert.Contains(t, xml, `<policy>0x0001</policy>`)
}

// A node labelled as offering SEV whose host reports only SNP loses the
// label (its agent publishes what the platform offers, as KubeVirt's node
// labeller does), so the VMI waits Unschedulable with a reason naming
// spec.domain.launchSecurity.sev instead of failing on the node.
func TestSEVVMIOnAHostWithoutSEVWaitsUnschedulable(t *testing.T) {
	c, _, wait := sevCluster(t, []string{"labelled"}, []string{"labelled"},
		map[string]*hypervisor.LaunchSecurity{"labelled": {SNP: true}})
	wait("unschedulable", func(v *virtkit.VirtualMachineInstance) bool {
		cond := virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
		return cond != nil && cond.Reason == virtkit.PodReasonUnschedulable
	})
	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(context.Background(), store.Key{Namespace: "default", Name: "sev"}, vmi))
	cond := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
	assert.Contains(t, cond.Message, "spec.domain.launchSecurity.sev")
	assert.Empty(t, vmi.Status.NodeName)
	n := &virtkit.Node{}
	require.NoError(t, c.Store().Get(context.Background(), store.Key{Name: "labelled"}, n))
	assert.NotContains(t, n.Labels, virtkit.SEVLabel, "the platform does not back the label the node was given")
	assert.Equal(t, "true", n.Labels[virtkit.SEVSNPLabel], "the platform's SNP is published")
}

// A host whose platform offers SEV gets the label from its agent, without
// an operator's: the VMI runs there.
func TestSEVVMIRunsOnAHostModellingSEV(t *testing.T) {
	_, _, wait := sevCluster(t, []string{"plain", "sev"}, nil,
		map[string]*hypervisor.LaunchSecurity{"sev": {SEV: true}, "plain": {}})
	var node string
	wait("running", func(v *virtkit.VirtualMachineInstance) bool { node = v.Status.NodeName; return v.IsRunning() })
	assert.Equal(t, "sev", node)
}
