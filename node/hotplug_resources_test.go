package node_test

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
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// hotplugCluster runs a one-node simulated cluster and a running VM with
// 1 socket of 2 cores and 1Gi of guest memory (KubeVirt's LiveUpdate
// defaults then give it maxSockets 4 and maxGuest 4Gi).
func hotplugCluster(t *testing.T, defaults virtkit.DefaultOptions) (*cluster.Cluster, context.Context) {
	t.Helper()
	return hotplugClusterWith(t, cluster.Options{NodeNames: []string{"n1"}, Defaults: defaults})
}

func hotplugClusterWith(t *testing.T, o cluster.Options) (*cluster.Cluster, context.Context) {
	t.Helper()
	c, err := cluster.New(o)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	guest := resource.MustParse("1Gi")
	always := virtkit.RunStrategyAlways
	vm := &virtkit.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hot"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &always,
			Template: &virtkit.VirtualMachineInstanceTemplateSpec{Spec: virtkit.VirtualMachineInstanceSpec{
				Domain: virtkit.DomainSpec{
					CPU:    &virtkit.CPU{Sockets: 1, Cores: 2, Threads: 1},
					Memory: &virtkit.Memory{Guest: &guest},
				},
			}},
		},
	}
	require.NoError(t, c.Apply(ctx, vm))
	_, err = c.WaitForVMI(ctx, "default", "hot", cluster.All(cluster.VMIPhase(virtkit.Running),
		func(v *virtkit.VirtualMachineInstance, found bool) bool {
			return found && v.Status.CurrentCPUTopology != nil && v.Status.Memory != nil
		}))
	require.NoError(t, err)
	return c, ctx
}

// editVM changes the VM's template.
func editVM(t *testing.T, ctx context.Context, c *cluster.Cluster, edit func(*virtkit.DomainSpec)) {
	t.Helper()
	require.NoError(t, store.RetryOnConflict(ctx, store.Backoff{}, func(ctx context.Context) error {
		vm := &virtkit.VirtualMachine{}
		if err := c.Store().Get(ctx, store.Key{Namespace: "default", Name: "hot"}, vm); err != nil {
			return err
		}
		edit(&vm.Spec.Template.Spec.Domain)
		return c.Store().Update(ctx, vm)
	}))
}

func restartRequired(msg string) cluster.Predicate[*virtkit.VirtualMachine] {
	return func(vm *virtkit.VirtualMachine, found bool) bool {
		c := virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineRestartRequired)
		return found && c != nil && c.Status == virtkit.ConditionTrue && (msg == "" || c.Message == msg)
	}
}

func TestHotplugCPUAndMemoryOnSimCluster(t *testing.T) {
	gi := func(s string) *resource.Quantity { q := resource.MustParse(s); return &q }
	cases := []struct {
		name     string
		defaults virtkit.DefaultOptions
		edit     func(*virtkit.DomainSpec)
		// live: the change reaches the running guest; else restartMsg.
		live       bool
		restartMsg string
		sockets    uint32 // VMI spec, status and domain afterwards
		guest      string // VMI spec memory.guest and status.memory.guestCurrent afterwards
	}{
		{name: "sockets 1 to 2", edit: func(d *virtkit.DomainSpec) { d.CPU.Sockets = 2 }, live: true, sockets: 2, guest: "1Gi"},
		{name: "sockets beyond maxSockets", edit: func(d *virtkit.DomainSpec) { d.CPU.Sockets = 5 },
			restartMsg: "CPU sockets updated in template spec to a value higher than what's available", sockets: 1, guest: "1Gi"},
		{name: "memory within maxGuest", edit: func(d *virtkit.DomainSpec) { d.Memory.Guest = gi("2Gi") }, live: true, sockets: 1, guest: "2Gi"},
		{name: "memory beyond maxGuest", edit: func(d *virtkit.DomainSpec) { d.Memory.Guest = gi("6Gi") },
			restartMsg: "memory hotplug not supported, Guest memory is greater than the configured maxGuest memory", sockets: 1, guest: "1Gi"},
		{name: "memory below boot", edit: func(d *virtkit.DomainSpec) { d.Memory.Guest = gi("512Mi") },
			restartMsg: "memory hotplug not supported, Memory hotplug is only available for VMs with at least 1Gi of guest memory", sockets: 1, guest: "1Gi"},
		{name: "cores are not live-updatable", edit: func(d *virtkit.DomainSpec) { d.CPU.Cores = 4 },
			restartMsg: "a non-live-updatable field was changed in the template spec", sockets: 1, guest: "1Gi"},
		{name: "Stage rollout", defaults: virtkit.DefaultOptions{NoHotplug: true}, edit: func(d *virtkit.DomainSpec) { d.CPU.Sockets = 2 },
			restartMsg: "a non-live-updatable field was changed in the template spec", sockets: 1, guest: "1Gi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, ctx := hotplugCluster(t, tc.defaults)
			editVM(t, ctx, c, tc.edit)
			key := store.Key{Namespace: "default", Name: "hot"}
			if tc.live {
				vmi, err := c.WaitForVMI(ctx, "default", "hot", func(v *virtkit.VirtualMachineInstance, found bool) bool {
					return found && v.Spec.Domain.CPU.Sockets == tc.sockets && v.Spec.Domain.Memory.Guest.String() == tc.guest &&
						v.Status.CurrentCPUTopology != nil && v.Status.CurrentCPUTopology.Sockets == tc.sockets &&
						v.Status.Memory != nil && v.Status.Memory.GuestCurrent != nil && v.Status.Memory.GuestCurrent.String() == tc.guest
				})
				require.NoError(t, err)
				assert.Equal(t, "1Gi", vmi.Status.Memory.GuestAtBoot.String(), "guestAtBoot stays what the guest booted with")
				assert.Equal(t, tc.guest, vmi.Status.Memory.GuestRequested.String())
				info, err := c.Node("n1").Hypervisor.Info(ctx, "default_hot")
				require.NoError(t, err)
				assert.Equal(t, int(tc.sockets)*2, info.VCPUs, "the domain's vCPUs")
				vm := &virtkit.VirtualMachine{}
				require.NoError(t, c.Store().Get(ctx, key, vm))
				assert.Nil(t, virtkit.GetCondition(vm.Status.Conditions, virtkit.VirtualMachineRestartRequired))
				return
			}
			_, err := c.WaitForVM(ctx, "default", "hot", restartRequired(tc.restartMsg))
			require.NoError(t, err)
			vmi := &virtkit.VirtualMachineInstance{}
			require.NoError(t, c.Store().Get(ctx, key, vmi))
			assert.Equal(t, tc.sockets, vmi.Spec.Domain.CPU.Sockets, "the running VMI keeps its sockets")
			assert.Equal(t, tc.guest, vmi.Spec.Domain.Memory.Guest.String(), "the running VMI keeps its memory")
			info, err := c.Node("n1").Hypervisor.Info(ctx, "default_hot")
			require.NoError(t, err)
			assert.Equal(t, int(tc.sockets)*2, info.VCPUs)
		})
	}
}

// noHotplugHost hides the simulated host's ResourceHotplugger, as a
// hypervisor that cannot change a running domain would.
type noHotplugHost struct{ hypervisor.Hypervisor }

// A node whose hypervisor cannot plug vCPUs or memory records the failed
// change on the VMI (not retried) and the VM asks for a restart.
func TestHotplugWithoutHypervisorSupport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(*virtkit.DomainSpec)
		cond    virtkit.ConditionType
		reason  string
		restart string
	}{
		{name: "vCPUs", edit: func(d *virtkit.DomainSpec) { d.CPU.Sockets = 2 }, cond: virtkit.VirtualMachineInstanceVCPUChange,
			reason: node.ReasonCPUHotplugFailed, restart: "CPU sockets updated in template spec. CPU-hotplug failed and is not available for this VM configuration"},
		{name: "memory", edit: func(d *virtkit.DomainSpec) { g := resource.MustParse("2Gi"); d.Memory.Guest = &g }, cond: virtkit.VirtualMachineInstanceMemoryChange,
			reason: node.ReasonMemoryHotplugFailed, restart: "memory updated in template spec. Memory-hotplug failed and is not available for this VM configuration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ctx := hotplugClusterWith(t, cluster.Options{NodeNames: []string{"n1"},
				NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
					return noHotplugHost{sim.New(sim.Options{Name: name})}, nil
				}})
			editVM(t, ctx, c, tc.edit)
			vmi, err := c.WaitForVMI(ctx, "default", "hot", cluster.HasCondition[*virtkit.VirtualMachineInstance](tc.cond, virtkit.ConditionFalse))
			require.NoError(t, err)
			assert.Equal(t, tc.reason, virtkit.GetCondition(vmi.Status.Conditions, tc.cond).Reason)
			_, err = c.WaitForVM(ctx, "default", "hot", restartRequired(tc.restart))
			require.NoError(t, err)
			assert.Equal(t, uint32(1), vmi.Status.CurrentCPUTopology.Sockets)
			assert.Equal(t, "1Gi", vmi.Status.Memory.GuestRequested.String())
		})
	}
}
