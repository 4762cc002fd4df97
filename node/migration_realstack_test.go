//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package node_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

const realGuestImage = "localhost/virtkit/tiny-guest:latest"

// realCluster is a control plane with node rs-a on libvirtd A and rs-b on
// libvirtd B (hack/realstack/libvirtd.sh), both running the tiny guest.
type realCluster struct {
	*cluster.Cluster
	hv  map[string]*libvirt.Hypervisor
	ctx context.Context
}

func startRealCluster(t *testing.T, tweaks ...func(*node.Options)) *realCluster {
	t.Helper()
	rc, _ := startRealClusterWith(t, realClusterOptions{nodeA: "rs-a", nodeB: "rs-b", workPrefix: "virtkit-migration-",
		timeout: 8 * time.Minute, tweaks: tweaks})
	return rc
}

// realClusterOptions name a real cluster's two nodes (on libvirtd A and
// B): tests that may run beside each other on the same daemons need nodes
// of their own, since an agent removes the domains of its node name that
// its cluster has no VMI for.
type realClusterOptions struct {
	nodeA, nodeB string
	workPrefix   string
	timeout      time.Duration // of the cluster's context
	// sharedVolumes leaves the cluster-wide domain options without a
	// runtime directory (each node has its own either way).
	sharedVolumes bool
	logger        *slog.Logger
	tweaks        []func(*node.Options)
}

// startRealClusterWith starts a control plane with o.nodeA on libvirtd A
// and o.nodeB on libvirtd B, both running the tiny guest; it returns the
// volume resolver's directory.
func startRealClusterWith(t *testing.T, o realClusterOptions) (*realCluster, string) {
	t.Helper()
	guest := libvirttest.RequireStack(t)
	work, uid, gid := libvirttest.QEMUWorkDir(t, o.workPrefix)
	volumes := filepath.Join(work, "volumes")
	dopts := domain.Options{
		Type: domain.TypeQEMU,
		VolumeResolver: &domain.DirResolver{Dir: volumes, Create: true,
			Kernels: map[string]domain.HostKernel{realGuestImage: {Kernel: guest.Kernel, Initrd: guest.Initramfs}}},
	}
	if !o.sharedVolumes {
		dopts.RuntimeDir = filepath.Join(work, "run")
	}
	// Each node gets its own runtime dir: both daemons share /tmp, and two
	// QEMUs binding one guest-agent socket path would cut the target's
	// agent off when the source's QEMU exits and removes the socket.
	domainOf := func(nodeName string) domain.Options {
		o := dopts
		o.RuntimeDir = filepath.Join(work, "run-"+nodeName)
		return o
	}
	for _, n := range []string{o.nodeA, o.nodeB} {
		require.NoError(t, os.MkdirAll(domainOf(n).RuntimeDir, 0o755))
	}

	uris := map[string]string{o.nodeA: libvirttest.SourceURI, o.nodeB: libvirttest.PeerURI}
	// How the other daemon reaches each one: A's TCP listener, B's URI.
	migrationURIs := map[string]string{o.nodeA: "qemu+tcp://127.0.0.1:16509/system", o.nodeB: libvirttest.PeerURI}
	hvs := map[string]*libvirt.Hypervisor{}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := cluster.New(cluster.Options{
		NodeNames: []string{o.nodeA, o.nodeB},
		Logger:    o.logger,
		NewHypervisor: func(name string) (hypervisor.Hypervisor, error) {
			h, err := libvirt.New(ctx, libvirt.Options{URI: uris[name]})
			if err != nil {
				return nil, err
			}
			hvs[name] = h
			return h, nil
		},
		Domain: dopts,
		NodeAgent: node.Options{
			RuntimeDirOwner:   &node.Owner{UID: uid, GID: gid},
			StatusInterval:    time.Second,
			HeartbeatInterval: 2 * time.Second,
			Migration: node.MigrationOptions{
				StatusInterval: 250 * time.Millisecond,
				Engine:         migration.Options{PollInterval: 200 * time.Millisecond},
			},
		},
		ConfigureNode: func(name string, no *node.Options) {
			no.Domain = domainOf(name)
			no.Migration.URI = migrationURIs[name]
			no.Migration.DataURI = "tcp://127.0.0.1"
			// The guest arrives with the target's own runtime paths.
			no.Migration.DestinationXML = func(vmi *virtkit.VirtualMachineInstance, target, sourceXML string) (string, error) {
				from, to := domain.RuntimeDir(vmi, domainOf(name)), domain.RuntimeDir(vmi, domainOf(target))
				return strings.ReplaceAll(sourceXML, from, to), nil
			}
			for _, tweak := range o.tweaks {
				tweak(no)
			}
		},
	})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	tctx, tcancel := context.WithTimeout(context.Background(), o.timeout)
	rc := &realCluster{Cluster: c, hv: hvs, ctx: tctx}
	t.Cleanup(func() {
		rc.deleteAll(t)
		tcancel()
		cancel()
		require.NoError(t, <-done)
		for _, h := range hvs {
			_ = h.Close()
		}
	})
	return rc, volumes
}

// deleteAll deletes the test's VMIs and waits for their guests to stop, so
// no domain outlives the test on either daemon.
func (c *realCluster) deleteAll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	migs := &virtkit.VirtualMachineInstanceMigrationList{}
	if err := c.Store().List(ctx, migs, store.ListOptions{}); err == nil {
		for i := range migs.Items {
			_ = c.Store().Delete(ctx, &migs.Items[i], store.DeleteOptions{})
		}
	}
	vmis := &virtkit.VirtualMachineInstanceList{}
	if err := c.Store().List(ctx, vmis, store.ListOptions{}); err != nil {
		return
	}
	for i := range vmis.Items {
		v := &vmis.Items[i]
		_ = c.Store().Delete(ctx, v, store.DeleteOptions{})
		if _, err := c.WaitForVMI(ctx, v.Namespace, v.Name, cluster.Gone[*virtkit.VirtualMachineInstance]()); err != nil {
			t.Logf("VMI %s/%s not gone: %v", v.Namespace, v.Name, err)
		}
	}
}

// tinyVMI is the tiny guest as a VMI; dirtyMiBs > 0 makes it dirty memory
// from boot (the guest's dirtier, over 48 MiB).
func tinyVMI(name string, dirtyMiBs int) *virtkit.VirtualMachineInstance {
	mem := resource.MustParse("128Mi")
	grace := int64(5)
	return &virtkit.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "mig-realstack", Labels: map[string]string{"app": name}},
		Spec: virtkit.VirtualMachineInstanceSpec{
			Domain: virtkit.DomainSpec{
				Memory: &virtkit.Memory{Guest: &mem},
				Firmware: &virtkit.Firmware{KernelBoot: &virtkit.KernelBoot{
					KernelArgs: libvirttest.KernelArgs(libvirttest.GuestOptions{DirtyMiBPerSec: dirtyMiBs}),
					Container:  &virtkit.KernelBootContainer{Image: realGuestImage, KernelPath: "/boot/vmlinuz", InitrdPath: "/boot/initramfs.gz"},
				}},
				Devices: virtkit.Devices{Interfaces: []virtkit.Interface{{
					Name: "default", InterfaceBindingMethod: virtkit.InterfaceBindingMethod{Masquerade: &virtkit.InterfaceMasquerade{}},
				}}},
			},
			Networks:                      []virtkit.Network{{Name: "default", NetworkSource: virtkit.NetworkSource{Pod: &virtkit.PodNetwork{}}}},
			TerminationGracePeriodSeconds: &grace,
		},
	}
}

// bootVMI boots the guest on rs-a (A, qemu:///system), so it migrates to
// B: a daemon A started without its TCP listener cannot be migrated to.
func (c *realCluster) bootVMI(t *testing.T, v *virtkit.VirtualMachineInstance) *virtkit.VirtualMachineInstance {
	t.Helper()
	c.cordon(t, "rs-b", true)
	defer c.cordon(t, "rs-b", false)
	// The scheduler honours the cordon once its cache has seen it: a VMI
	// created in the instant after may still land on rs-b, as on
	// Kubernetes. Such a VMI is deleted and created again.
	for try := 1; ; try++ {
		require.NoError(t, c.Apply(c.ctx, v.DeepCopy()))
		got, err := c.WaitForVMI(c.ctx, v.Namespace, v.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
			return found && v.IsRunning() && v.IsMigratable() &&
				virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
		})
		require.NoError(t, err, "the tiny guest boots and its agent answers")
		if got.Status.NodeName == "rs-a" {
			return got
		}
		require.Less(t, try, 3, "placed on the cordoned rs-b %d times", try)
		t.Logf("placed on rs-b in the instant after its cordon; placing it again")
		require.NoError(t, c.Store().Delete(c.ctx, got, store.DeleteOptions{}))
		_, err = c.WaitForVMI(c.ctx, v.Namespace, v.Name, func(_ *virtkit.VirtualMachineInstance, found bool) bool { return !found })
		require.NoError(t, err)
	}
}

func (c *realCluster) cordon(t *testing.T, name string, on bool) {
	t.Helper()
	require.Eventually(t, func() bool {
		n := &virtkit.Node{}
		if err := c.Store().Get(c.ctx, store.Key{Name: name}, n); err != nil {
			return false
		}
		n.Spec.Unschedulable = on
		return c.Store().Update(c.ctx, n) == nil
	}, time.Minute, 50*time.Millisecond)
}

func (c *realCluster) waitMigration(t *testing.T, m *virtkit.VirtualMachineInstanceMigration, cond func(*virtkit.VirtualMachineInstanceMigration, bool) bool) *virtkit.VirtualMachineInstanceMigration {
	t.Helper()
	got, err := cluster.WaitFor(c.ctx, c.Store(), store.KeyOf(m),
		func() *virtkit.VirtualMachineInstanceMigration { return &virtkit.VirtualMachineInstanceMigration{} },
		&virtkit.VirtualMachineInstanceMigrationList{}, cond)
	require.NoError(t, err)
	return got
}

// TestRealStackMigrationSucceeds live-migrates the real TCG guest between
// the two libvirtd instances while its dirtier writes 16 MiB/s, through the
// whole lifecycle, and checks the guest agent answers on the new host.
func TestRealStackMigrationSucceeds(t *testing.T) {
	c := startRealCluster(t)
	vmi := c.bootVMI(t, tinyVMI("mover", 16))
	source := vmi.Status.NodeName
	dom := node.DomainName(vmi.Namespace, vmi.Name)

	began := time.Now()
	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	done := c.waitMigration(t, mig, func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool { return found && m.IsFinal() })
	lifecycle := time.Since(began)
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "state: %+v", done.Status.MigrationState)

	after, err := c.WaitForVMI(c.ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName != source && len(v.Status.ActivePods) == 1 &&
			v.Labels[virtkit.NodeNameLabel] == v.Status.NodeName
	})
	require.NoError(t, err)
	target := after.Status.NodeName
	assert.Equal(t, virtkit.Running, after.Status.Phase)
	ms := after.Status.MigrationState
	require.NotNil(t, ms)
	assert.True(t, ms.Completed)
	assert.False(t, ms.Failed)
	assert.Equal(t, source, ms.SourceNode)
	assert.Equal(t, target, ms.TargetNode)
	require.NotNil(t, ms.StartTimestamp)
	require.NotNil(t, ms.EndTimestamp)
	require.NotNil(t, ms.Engine)
	t.Logf("engine strategy %s, decisions:", ms.Engine.Strategy)
	for _, d := range ms.Engine.Decisions {
		t.Logf("  %s: %s %v", d.Action, d.Reason, d.Numbers)
	}

	// The real qemu-ga answers on the target; the source has no domain.
	actx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	require.NoError(t, libvirttest.WaitAgent(actx, c.hv[target], dom))
	_, err = c.hv[source].Info(c.ctx, dom)
	assert.ErrorIs(t, err, hypervisor.ErrNotFound)
	_, err = c.WaitForVMI(c.ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName == target &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	})
	require.NoError(t, err, "AgentConnected on the target")

	snap, ok := c.Node(source).Agent.LastMigrationSnapshot(vmi.Namespace, vmi.Name)
	require.True(t, ok)
	require.True(t, snap.HaveStats)
	total, _ := snap.Stats.Elapsed.Get()
	down, haveDown := snap.Stats.Downtime.Get()
	sent, _ := snap.Stats.DataProcessed.Get()
	dirty, haveDirty := snap.Engine.DirtyRateBefore.Get()
	t.Logf("real migration %s -> %s: lifecycle %v (object created -> Succeeded), job total %v, downtime %v (measured %v), sent %d MiB, mode %s, dirty rate before start %.1f MiB/s (measured %v)",
		source, target, lifecycle.Round(time.Millisecond), total.Round(time.Millisecond), down, haveDown, sent>>20, snap.Stats.Mode, dirty/(1<<20), haveDirty)
	assert.True(t, haveDown, "the job reports its downtime")
}

// TestRealStackMigrationCancelled slows a migration to 1 MiB/s with a
// MigrationPolicy, deletes the migration object while it runs, and checks
// the guest stays Running on the source with the abort recorded.
func TestRealStackMigrationCancelled(t *testing.T) {
	c := startRealCluster(t)
	bw := resource.MustParse("1Mi")
	require.NoError(t, c.Apply(c.ctx, &virtkit.MigrationPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.MigrationsAPIVersion, Kind: virtkit.KindMigrationPolicy},
		ObjectMeta: metav1.ObjectMeta{Name: "crawl"},
		Spec: virtkit.MigrationPolicySpec{
			Selectors:             &virtkit.Selectors{VirtualMachineInstanceSelector: map[string]string{"app": "stayer"}},
			BandwidthPerMigration: &bw,
		},
	}))
	vmi := c.bootVMI(t, tinyVMI("stayer", 0))
	source := vmi.Status.NodeName
	dom := node.DomainName(vmi.Namespace, vmi.Name)

	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	c.waitMigration(t, mig, func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool {
		return found && m.Status.Phase == virtkit.MigrationRunning
	})
	// Let some data flow, so the abort hits a job in progress.
	require.Eventually(t, func() bool {
		for _, s := range c.Node(source).Agent.MigrationSnapshots() {
			if p, ok := s.Stats.DataProcessed.Get(); ok && s.Name == "stayer" && p > 0 {
				return true
			}
		}
		return false
	}, time.Minute, 100*time.Millisecond)
	running := &virtkit.VirtualMachineInstance{}
	require.NoError(t, c.Store().Get(c.ctx, store.KeyOf(vmi), running))
	require.NotNil(t, running.Status.MigrationState.MigrationPolicyName)
	assert.Equal(t, "crawl", *running.Status.MigrationState.MigrationPolicyName)
	assert.Len(t, running.ActiveNodes(), 2, "both hosts hold the VMI while it moves")

	abortAt := time.Now()
	require.NoError(t, c.Store().Delete(c.ctx, mig, store.DeleteOptions{}))
	after, err := c.WaitForVMI(c.ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.MigrationState != nil && v.Status.MigrationState.Failed
	})
	require.NoError(t, err)
	t.Logf("abort took %v", time.Since(abortAt).Round(time.Millisecond))
	ms := after.Status.MigrationState
	assert.True(t, ms.AbortRequested)
	assert.Equal(t, virtkit.MigrationAbortSucceeded, ms.AbortStatus)
	assert.Equal(t, virtkit.MigrationReasonAborted, ms.FailureReason)
	assert.Equal(t, source, after.Status.NodeName)

	info, err := c.hv[source].Info(c.ctx, dom)
	require.NoError(t, err)
	assert.Equal(t, hypervisor.StateRunning, info.State, "the guest keeps running on the source")
	actx, cancel := context.WithTimeout(c.ctx, time.Minute)
	defer cancel()
	require.NoError(t, libvirttest.WaitAgent(actx, c.hv[source], dom), "and its agent still answers there")
	var target string
	for name := range c.hv {
		if name != source {
			target = name
		}
	}
	require.Eventually(t, func() bool {
		_, err := c.hv[target].Info(c.ctx, dom)
		return err != nil
	}, time.Minute, 200*time.Millisecond, "no half-arrived copy is left on the target")
	_, err = c.WaitForVMI(c.ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && len(v.Status.ActivePods) == 1 && v.IsRunning()
	})
	require.NoError(t, err)
	c.waitMigration(t, mig, func(_ *virtkit.VirtualMachineInstanceMigration, found bool) bool { return !found })
}
