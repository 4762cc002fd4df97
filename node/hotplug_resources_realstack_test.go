//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// guestVCPU is one entry of the guest agent's guest-get-vcpus reply.
type guestVCPU struct {
	LogicalID int  `json:"logical-id"`
	Online    bool `json:"online"`
}

// guestVCPUs asks the guest which logical CPUs its kernel knows.
func guestVCPUs(ctx context.Context, a hypervisor.AgentCommander, dom string) ([]guestVCPU, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := a.AgentCommand(cctx, dom, `{"execute":"guest-get-vcpus"}`)
	if err != nil {
		return nil, err
	}
	var reply struct {
		Return []guestVCPU `json:"return"`
	}
	if err := json.Unmarshal([]byte(out), &reply); err != nil {
		return nil, fmt.Errorf("guest-get-vcpus reply %q: %w", out, err)
	}
	return reply.Return, nil
}

func online(cpus []guestVCPU) int {
	n := 0
	for _, c := range cpus {
		if c.Online {
			n++
		}
	}
	return n
}

// hotplugNode is the node of the hot-plug test on libvirtd A: a name of
// its own, so node agents of other tests on the same daemon leave its
// domains alone (and it theirs).
const hotplugNode = "cpuhot-rs-a"

// startHotplugRealCluster runs a control plane with one node on libvirtd A
// running the tiny guest; its guests are deleted at the end.
func startHotplugRealCluster(t *testing.T) (*cluster.Cluster, map[string]*libvirt.Hypervisor, context.Context) {
	t.Helper()
	guest := libvirttest.RequireStack(t)
	work, uid, gid := libvirttest.QEMUWorkDir(t, "virtkit-cpuhot-")
	dopts := domain.Options{
		Type:       domain.TypeQEMU,
		RuntimeDir: filepath.Join(work, "run"),
		VolumeResolver: &domain.DirResolver{Dir: filepath.Join(work, "volumes"), Create: true,
			Kernels: map[string]domain.HostKernel{realGuestImage: {Kernel: guest.Kernel, Initrd: guest.Initramfs}}},
	}
	require.NoError(t, os.MkdirAll(dopts.RuntimeDir, 0o755))
	hvs := map[string]*libvirt.Hypervisor{}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cluster.New(cluster.Options{
		NodeNames: []string{hotplugNode},
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h, err := libvirt.New(ctx, libvirt.Options{URI: libvirttest.SourceURI})
			if err != nil {
				return nil, err
			}
			hvs[name] = h
			return h, nil
		},
		Domain: dopts,
		NodeAgent: node.Options{
			RuntimeDirOwner: &node.Owner{UID: uid, GID: gid},
			StatusInterval:  time.Second,
			Logger:          slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})),
		},
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	tctx, tcancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(func() {
		rc := &realCluster{Cluster: c, ctx: tctx}
		rc.deleteAll(t)
		tcancel()
		cancel()
		require.NoError(t, <-done)
		for _, h := range hvs {
			_ = h.Close()
		}
	})
	return c, hvs, tctx
}

// TestRealStackHotplugCPU runs a VM of the tiny guest with 1 of 4
// sockets on libvirtd+QEMU (TCG), raises its template's sockets to 2
// (KubeVirt's LiveUpdate rollout), and checks that the node agent plugged
// a vCPU into the running domain and that the guest's kernel counts it
// (guest-get-vcpus). The tiny guest has no udev to bring a hot-plugged
// CPU online; the test onlines it through the agent (guest-set-vcpus), as
// a distribution's udev rule would. It then raises memory.guest from 1Gi
// to 2Gi within maxGuest 4Gi and checks the virtio-mem device's requested
// size; the tiny guest has no virtio_mem driver, so nothing gets plugged
// into it (status.memory.guestCurrent stays at the boot memory).
func TestRealStackHotplugCPU(t *testing.T) {
	c, hvs, ctx := startHotplugRealCluster(t)
	const ns, name = "cpuhot-realstack", "hot"
	key := store.Key{Namespace: ns, Name: name}
	dom := node.DomainName(ns, name)

	tmpl := tinyVMI(name, 0)
	guest := resource.MustParse("1Gi")
	tmpl.Spec.Domain.Memory = &virtkit.Memory{Guest: &guest}
	tmpl.Spec.Domain.CPU = &virtkit.CPU{Sockets: 1, Cores: 1, Threads: 1}
	always := virtkit.RunStrategyAlways
	vm := &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: virtkit.VirtualMachineSpec{RunStrategy: &always, Template: &virtkit.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: tmpl.Labels}, Spec: tmpl.Spec,
		}},
	}
	require.NoError(t, c.Apply(ctx, vm))
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = c.Store().Delete(dctx, vm, store.DeleteOptions{})
	})
	bctx, bcancel := context.WithTimeout(ctx, 3*time.Minute)
	vmi, err := c.WaitForVMI(bctx, ns, name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && (v.IsFinal() || v.IsRunning() && virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected))
	})
	bcancel()
	require.NoError(t, err, "the tiny guest boots and its agent answers")
	require.False(t, vmi.IsFinal(), "VMI ended: %+v", vmi.Status)
	require.Equal(t, uint32(4), vmi.Spec.Domain.CPU.MaxSockets, "KubeVirt's LiveUpdate default: 4 × sockets")
	hv := hvs[vmi.Status.NodeName]
	require.NotNil(t, hv, "node %q", vmi.Status.NodeName)
	cpus, err := guestVCPUs(ctx, hv, dom)
	require.NoError(t, err)
	require.Len(t, cpus, 1, "the guest boots with one vCPU: %+v", cpus)

	edit := func(f func(*virtkit.DomainSpec)) {
		require.NoError(t, store.RetryOnConflict(ctx, store.Backoff{}, func(ctx context.Context) error {
			vm := &virtkit.VirtualMachine{}
			if err := c.Store().Get(ctx, key, vm); err != nil {
				return err
			}
			f(&vm.Spec.Template.Spec.Domain)
			return c.Store().Update(ctx, vm)
		}))
	}

	start := time.Now()
	edit(func(d *virtkit.DomainSpec) { d.CPU.Sockets = 2 })
	vmi, err = c.WaitForVMI(ctx, ns, name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.CurrentCPUTopology != nil && v.Status.CurrentCPUTopology.Sockets == 2
	})
	require.NoError(t, err, "status.currentCPUTopology follows the plugged vCPU")
	assert.Equal(t, uint32(2), vmi.Spec.Domain.CPU.Sockets)
	info, err := hv.Info(ctx, dom)
	require.NoError(t, err)
	assert.Equal(t, 2, info.VCPUs, "libvirt's vCPU count of the running domain")
	t.Logf("template change to vCPU plugged and reported: %s", time.Since(start).Round(10*time.Millisecond))

	// The guest's kernel registers the hot-added CPU (ACPI); count it.
	require.Eventually(t, func() bool {
		cpus, err = guestVCPUs(ctx, hv, dom)
		return err == nil && len(cpus) == 2
	}, time.Minute, time.Second, "the guest counts 2 CPUs (last: %+v, %v)", cpus, err)
	t.Logf("guest CPUs after the hot-plug: %+v", cpus)
	if online(cpus) < 2 {
		// No udev in the tiny guest: bring it online as a udev rule would.
		var set []guestVCPU
		for _, c := range cpus {
			set = append(set, guestVCPU{LogicalID: c.LogicalID, Online: true})
		}
		arg, err := json.Marshal(map[string]any{"execute": "guest-set-vcpus", "arguments": map[string]any{"vcpus": set[1:]}})
		require.NoError(t, err)
		if set[0].LogicalID != 0 {
			arg, err = json.Marshal(map[string]any{"execute": "guest-set-vcpus", "arguments": map[string]any{"vcpus": set}})
			require.NoError(t, err)
		}
		_, err = hv.AgentCommand(ctx, dom, string(arg))
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		cpus, err = guestVCPUs(ctx, hv, dom)
		return err == nil && online(cpus) == 2
	}, time.Minute, time.Second, "the guest runs on 2 online CPUs (last: %+v, %v)", cpus, err)

	// Beyond maxSockets: the VM asks for a restart; the guest keeps 2.
	edit(func(d *virtkit.DomainSpec) { d.CPU.Sockets = 9 })
	_, err = c.WaitForVM(ctx, ns, name, func(v *virtkit.VirtualMachine, found bool) bool {
		cond := virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineRestartRequired)
		return found && cond != nil && cond.Status == virtkit.ConditionTrue
	})
	require.NoError(t, err)
	info, err = hv.Info(ctx, dom)
	require.NoError(t, err)
	assert.Equal(t, 2, info.VCPUs)
	edit(func(d *virtkit.DomainSpec) { d.CPU.Sockets = 2 })

	// Memory: the virtio-mem device is asked for 1Gi more.
	edit(func(d *virtkit.DomainSpec) { g := resource.MustParse("2Gi"); d.Memory.Guest = &g })
	vmi, err = c.WaitForVMI(ctx, ns, name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		m := v.Status.Memory
		return found && m != nil && m.GuestRequested != nil && m.GuestRequested.String() == "2Gi"
	})
	require.NoError(t, err, "status.memory.guestRequested follows the virtio-mem device")
	assert.Equal(t, "1Gi", vmi.Status.Memory.GuestAtBoot.String())
	pm, err := hv.PluggableMemory(ctx, dom)
	require.NoError(t, err)
	assert.Equal(t, uint64(1<<30), pm.RequestedBytes, "the virtio-mem device's requested size")
	assert.Equal(t, uint64(3<<30), pm.SizeBytes, "maxGuest 4Gi less the 1Gi boot memory")
	t.Logf("virtio-mem after the request: %+v; status.memory: atBoot %s current %s requested %s (the tiny guest has no virtio_mem driver)",
		pm, vmi.Status.Memory.GuestAtBoot, vmi.Status.Memory.GuestCurrent, vmi.Status.Memory.GuestRequested)
}
