//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// virshActive lists the active (running or paused) domains of the daemon
// at uri with virsh: libvirt's own answer, not the agent's adapter.
func virshActive(ctx context.Context, uri string) (map[string]bool, error) {
	out, err := exec.CommandContext(ctx, "virsh", "-q", "-c", uri, "list", "--name").Output()
	if err != nil {
		return nil, fmt.Errorf("virsh -c %s list: %w", uri, err)
	}
	active := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			active[l] = true
		}
	}
	return active, nil
}

// TestRealStackFenceUnderPartition runs a VM (runStrategy Always) on a
// real guest under libvirtd A, then cuts node rs-a's agent off from the
// store (every read and write fails) for longer than its fence timeout.
// The agent must destroy the guest (self-fence) before the control plane
// fails the VMI and restarts the VM on rs-b (libvirtd B), and virsh on the
// two daemons must never list the VM's domain as active on both at once.
// After the cut heals, the fenced guest is cleaned up on A, not restarted.
func TestRealStackFenceUnderPartition(t *testing.T) {
	guest := libvirttest.RequireStack(t)
	if _, err := exec.LookPath("virsh"); err != nil {
		t.Skip("virsh not found (hack/realstack/install.sh installs libvirt-clients)")
	}
	const (
		heartbeat = time.Second
		fence     = 5 * time.Second
		ns        = "fence-realstack"
		vmName    = "fenced"
	)
	work, uid, gid := libvirttest.QEMUWorkDir(t, "virtkit-fence-")
	domainOf := func(nodeName string) domain.Options {
		return domain.Options{
			Type:       domain.TypeQEMU,
			RuntimeDir: filepath.Join(work, "run-"+nodeName),
			VolumeResolver: &domain.DirResolver{Dir: filepath.Join(work, "volumes"), Create: true,
				Kernels: map[string]domain.HostKernel{realGuestImage: {Kernel: guest.Kernel, Initrd: guest.Initramfs}}},
		}
	}
	uris := map[string]string{"rs-a": libvirttest.SourceURI, "rs-b": libvirttest.PeerURI}
	for n := range uris {
		require.NoError(t, os.MkdirAll(domainOf(n).RuntimeDir, 0o755))
	}

	st := store.NewMemory()
	cut := &cuttableStore{Store: st} // rs-a's connection to the store
	nh, err := controller.NewNodeHealthReconciler(controller.NodeHealthOptions{Store: st,
		MonitorGracePeriod: 2 * time.Second, UnresponsiveGracePeriod: 2 * time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var hvMu sync.Mutex
	var hvs []*libvirt.Hypervisor
	c, err := cluster.New(cluster.Options{
		Store:     st,
		NodeNames: []string{"rs-a", "rs-b"},
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h, err := libvirt.New(ctx, libvirt.Options{URI: uris[name]})
			if err != nil {
				return nil, err
			}
			hvMu.Lock()
			hvs = append(hvs, h)
			hvMu.Unlock()
			return h, nil
		},
		Replace: map[string]reconcile.Reconciler{cluster.NodeHealthController: nh},
		NodeAgent: node.Options{
			RuntimeDirOwner:   &node.Owner{UID: uid, GID: gid},
			StatusInterval:    time.Second,
			HeartbeatInterval: heartbeat,
			FenceTimeout:      fence,
		},
		ConfigureNode: func(name string, o *node.Options) {
			o.Domain = domainOf(name)
			if name == "rs-a" {
				o.Store = cut
			}
		},
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	tctx, tcancel := context.WithTimeout(ctx, 6*time.Minute)
	t.Cleanup(func() {
		cut.cutAll(false)
		dctx, dcancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer dcancel()
		vm := &virtkit.VirtualMachine{}
		if err := st.Get(dctx, store.Key{Namespace: ns, Name: vmName}, vm); err == nil {
			_ = st.Delete(dctx, vm, store.DeleteOptions{})
		}
		vmis := &virtkit.VirtualMachineInstanceList{}
		if err := st.List(dctx, vmis, store.ListOptions{Namespace: ns}); err == nil {
			for i := range vmis.Items {
				v := &vmis.Items[i]
				_ = st.Delete(dctx, v, store.DeleteOptions{})
				if _, err := c.WaitForVMI(dctx, v.Namespace, v.Name, cluster.Gone[*virtkit.VirtualMachineInstance]()); err != nil {
					t.Logf("VMI %s/%s not gone: %v", v.Namespace, v.Name, err)
				}
			}
		}
		tcancel()
		cancel()
		assert.NoError(t, <-done)
		for _, h := range hvs {
			_ = h.Close()
		}
	})

	cordon := func(name string, on bool) {
		t.Helper()
		require.Eventually(t, func() bool {
			n := &virtkit.Node{}
			if err := st.Get(tctx, store.Key{Name: name}, n); err != nil {
				return false
			}
			n.Spec.Unschedulable = on
			return st.Update(tctx, n) == nil
		}, time.Minute, 50*time.Millisecond)
	}

	// Boot the VM on rs-a.
	v := tinyVMI(vmName, 0)
	rs := virtkit.RunStrategyAlways
	vm := &virtkit.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachine},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: vmName},
		Spec: virtkit.VirtualMachineSpec{RunStrategy: &rs, Template: &virtkit.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: v.Labels}, Spec: v.Spec}},
	}
	cordon("rs-b", true)
	require.NoError(t, c.Apply(tctx, vm))
	first, err := c.WaitForVMI(tctx, ns, vmName, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.IsRunning()
	})
	require.NoError(t, err, "the tiny guest boots")
	require.Equal(t, "rs-a", first.Status.NodeName)
	cordon("rs-b", false)
	dom := node.DomainName(ns, vmName)

	// The sampler: libvirt's ground truth on both daemons. B is asked
	// first: a guest B already runs that A still lists afterwards ran on
	// both at once.
	var (
		mu                 sync.Mutex
		samples            int
		doubles            []string
		lastOnA, firstOnB  time.Time
		sampleErr          error
		sctx, stopSampling = context.WithCancel(tctx)
		sampled            = make(chan struct{})
	)
	go func() {
		defer close(sampled)
		for sctx.Err() == nil {
			onB, errB := virshActive(sctx, libvirttest.PeerURI)
			tB := time.Now()
			onA, errA := virshActive(sctx, libvirttest.SourceURI)
			tA := time.Now()
			mu.Lock()
			if err := cmpErr(errB, errA); err != nil {
				if sctx.Err() == nil && sampleErr == nil {
					sampleErr = err
				}
				mu.Unlock()
				continue
			}
			samples++
			if onA[dom] {
				lastOnA = tA
			}
			if onB[dom] && firstOnB.IsZero() {
				firstOnB = tB
			}
			if onA[dom] && onB[dom] {
				doubles = append(doubles, tA.Format("15:04:05.000"))
			}
			mu.Unlock()
		}
	}()

	// Partition rs-a from the store past its fence timeout, until the VM
	// runs again on rs-b.
	agentA := c.Node("rs-a").Agent
	cut.cutAll(true)
	cutAt := time.Now()
	require.Eventually(t, agentA.Fenced, time.Minute, 50*time.Millisecond, "rs-a fences itself")
	fencedAfter := time.Since(cutAt)
	second, err := c.WaitForVMI(tctx, ns, vmName, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.UID != first.UID && v.IsRunning() && v.Status.NodeName == "rs-b"
	})
	require.NoError(t, err, "the VM is restarted on rs-b")
	movedAfter := time.Since(cutAt)
	time.Sleep(2 * time.Second) // a few more samples with both daemons up
	cut.cutAll(false)

	// Healed: the fenced guest's domain leaves A, and A starts nothing.
	require.Eventually(t, func() bool {
		doms, err := c.Node("rs-a").Hypervisor.List(tctx)
		if err != nil {
			return false
		}
		for _, d := range doms {
			if d.Name == dom {
				return false
			}
		}
		return !agentA.Fenced()
	}, 2*time.Minute, 100*time.Millisecond, "the fenced guest is cleaned up on rs-a")
	time.Sleep(2 * time.Second)
	stopSampling()
	<-sampled

	mu.Lock()
	defer mu.Unlock()
	require.NoError(t, sampleErr)
	old := &virtkit.VirtualMachineInstance{}
	err = st.Get(tctx, store.Key{Namespace: ns, Name: vmName}, old)
	require.NoError(t, err)
	t.Logf("fenced %v after the cut, VM running on rs-b %v after it; %d virsh samples of both daemons; "+
		"last seen active on A %v after the cut, first on B %v after it; double runs: %d; fences of rs-a: %d",
		fencedAfter.Round(10*time.Millisecond), movedAfter.Round(10*time.Millisecond), samples,
		lastOnA.Sub(cutAt).Round(10*time.Millisecond), firstOnB.Sub(cutAt).Round(10*time.Millisecond), len(doubles), agentA.Fences())
	assert.Empty(t, doubles, "the VM's domain was active on both daemons at once")
	require.False(t, firstOnB.IsZero(), "B ran the VM")
	assert.True(t, lastOnA.Before(firstOnB), "A's guest was destroyed before B started the VM")
	assert.GreaterOrEqual(t, fencedAfter, fence-2*heartbeat, "not fenced before its timeout")
	assert.Greater(t, samples, 20)
	assert.Equal(t, second.UID, old.UID, "the VM's VMI is the one on rs-b")
	assert.Equal(t, uint64(1), agentA.Fences())
}

// cmpErr returns the first non-nil error.
func cmpErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
