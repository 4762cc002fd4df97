package node_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// newSharingVMI stores a ConfigMap and a scheduled VMI that shares it by
// virtiofs.
func newSharingVMI(t *testing.T, st store.Store, name string) *virtkit.VirtualMachineInstance {
	t.Helper()
	ctx := context.Background()
	if err := st.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "app"},
		Data: map[string]string{"greeting": "hello", "mode": "shared"}}); err != nil {
		require.ErrorIs(t, err, store.ErrAlreadyExists)
	}
	vmi := &virtkit.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.APIVersion, Kind: virtkit.KindVirtualMachineInstance},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
			Labels: map[string]string{virtkit.NodeNameLabel: nodeName}},
	}
	mem := resource.MustParse("128Mi")
	grace := int64(1)
	vmi.Spec.Domain.Memory = &virtkit.Memory{Guest: &mem}
	vmi.Spec.TerminationGracePeriodSeconds = &grace
	vmi.Spec.Domain.Devices.Filesystems = []virtkit.Filesystem{{Name: "app", Virtiofs: &virtkit.FilesystemVirtiofs{}}}
	vmi.Spec.Volumes = []virtkit.Volume{{Name: "app", VolumeSource: virtkit.VolumeSource{
		ConfigMap: &virtkit.ConfigMapVolumeSource{LocalObjectReference: virtkit.LocalObjectReference{Name: "app"}}}}}
	virtkit.SetDefaults(vmi)
	require.Empty(t, virtkit.Validate(vmi))
	require.NoError(t, st.Create(ctx, vmi))
	vmi.Status.NodeName = nodeName
	vmi.SetPhase(virtkit.Scheduled, metav1.Now())
	require.NoError(t, st.UpdateStatus(ctx, vmi))
	return vmi
}

// virtiofsdPID is the pid a share's pid file records, checked to be a
// live virtiofsd serving that socket.
func virtiofsdPID(t *testing.T, socket string) int {
	t.Helper()
	b, err := os.ReadFile(socket + ".pid")
	require.NoError(t, err)
	pid, err := strconv.Atoi(string(b))
	require.NoError(t, err)
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	require.NoError(t, err)
	require.Contains(t, string(cmdline), "--socket-path="+socket)
	return pid
}

func gone(pid int) bool {
	// A reaped child is gone; one an earlier agent started (not ours to
	// reap) is gone once it is a zombie or absent.
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z" || syscall.Kill(pid, 0) != nil
}

// TestVirtiofsShares runs the real virtiofsd for a share: started with the
// files written before the domain is defined, kept and adopted across an
// agent restart, stopped when the VMI is deleted, and swept at start when
// its domain disappeared while no agent ran.
func TestVirtiofsShares(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, "virtiofsd needs root (it sandboxes itself in namespaces)")
	}
	found := false
	for _, p := range node.DefaultVirtiofsdPaths {
		if _, err := os.Stat(p); err == nil {
			found = true
		}
	}
	if !found {
		testenv.Unavailable(t, "no virtiofsd; Debian: apt-get install qemu-system-common")
	}
	ctx := context.Background()
	st, hv := store.NewMemory(), daemonShares{sim.New(sim.Options{Name: nodeName})}
	runDir := t.TempDir()
	t.Cleanup(func() { // whatever a failed run left
		pids, _ := filepath.Glob(filepath.Join(runDir, "*", "virtiofs", "*.sock.pid"))
		for _, pf := range pids {
			if b, err := os.ReadFile(pf); err == nil {
				if pid, err := strconv.Atoi(string(b)); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
	})
	tweak := func(o *node.Options) { o.Domain.RuntimeDir = runDir }
	stop := runAgent(t, st, hv, tweak)
	vmi := newSharingVMI(t, st, "shares")
	running := eventuallyPhase(t, st, "shares", virtkit.Running)

	shares, err := domain.Shares(ctx, running, domain.Options{RuntimeDir: runDir, ConfigResolver: node.StoreConfig{Store: st}})
	require.NoError(t, err)
	require.Len(t, shares, 1)
	sh := shares[0]
	got, err := os.ReadFile(filepath.Join(sh.Dir, "greeting"))
	require.NoError(t, err)
	assert.Equal(t, "hello", string(got))
	fi, err := os.Stat(sh.Socket)
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, fi.Mode().Type())
	pid := virtiofsdPID(t, sh.Socket)
	xml, err := hv.XML(ctx, domain.DomainName(vmi))
	require.NoError(t, err)
	assert.Contains(t, xml, `<source socket="`+sh.Socket+`">`)

	// The agent stops; the guest and its virtiofsd go on. A new agent
	// adopts the process, and stops it when the VMI is deleted.
	stop()
	require.False(t, gone(pid), "virtiofsd outlives its agent, as the guest does")
	runAgent(t, st, hv, tweak)
	require.NoError(t, st.Delete(ctx, running, store.DeleteOptions{}))
	require.Eventually(t, func() bool { _, ok := getVMI(t, st, "shares"); return !ok }, 15*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool { return gone(pid) }, 15*time.Second, 20*time.Millisecond, "the adopted virtiofsd is stopped")
	assert.NoFileExists(t, sh.Socket+".pid")

	// A domain that disappears while no agent runs: the next agent stops
	// its virtiofsd when it starts.
	st2, hv2 := store.NewMemory(), daemonShares{sim.New(sim.Options{Name: nodeName})}
	stop2 := runAgent(t, st2, hv2, tweak)
	v2 := newSharingVMI(t, st2, "swept")
	eventuallyPhase(t, st2, "swept", virtkit.Running)
	shares, err = domain.Shares(ctx, v2, domain.Options{RuntimeDir: runDir, ConfigResolver: node.StoreConfig{Store: st2}})
	require.NoError(t, err)
	pid2 := virtiofsdPID(t, shares[0].Socket)
	stop2()
	require.NoError(t, hv2.Destroy(ctx, domain.DomainName(v2)))
	require.NoError(t, hv2.Undefine(ctx, domain.DomainName(v2)))
	runAgent(t, st2, hv2, tweak)
	require.Eventually(t, func() bool { return gone(pid2) }, 15*time.Second, 20*time.Millisecond, "the stale virtiofsd is swept")
}

// TestVirtiofsWithoutVirtiofsd: a host without virtiofsd fails the VMI
// with a reason naming the field and what is missing.
func TestVirtiofsWithoutVirtiofsd(t *testing.T) {
	st, hv := store.NewMemory(), daemonShares{sim.New(sim.Options{Name: nodeName})}
	runAgent(t, st, hv, func(o *node.Options) {
		o.Domain.RuntimeDir = t.TempDir()
		o.Virtiofs.Binary = filepath.Join(t.TempDir(), "no-virtiofsd")
	})
	newSharingVMI(t, st, "nofs")
	v := eventuallyPhase(t, st, "nofs", virtkit.Failed)
	assert.Contains(t, v.Status.Reason, "spec.domain.devices.filesystems")
	assert.Contains(t, v.Status.Reason, "virtiofsd not found")
	assert.Empty(t, domainNames(t, hv))
}
