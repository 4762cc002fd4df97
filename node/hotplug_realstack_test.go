//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package node_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// guestShell runs a shell command in the guest through qemu-ga's
// guest-exec and returns its standard output.
func guestShell(ctx context.Context, a hypervisor.AgentCommander, dom, script string) (string, error) {
	args, err := json.Marshal(map[string]any{"execute": "guest-exec", "arguments": map[string]any{
		"path": "/bin/sh", "arg": []string{"-c", script}, "capture-output": true}})
	if err != nil {
		return "", err
	}
	raw, err := a.AgentCommand(ctx, dom, string(args))
	if err != nil {
		return "", err
	}
	var started struct {
		Return struct {
			PID int `json:"pid"`
		} `json:"return"`
	}
	if err := json.Unmarshal([]byte(raw), &started); err != nil {
		return "", fmt.Errorf("guest-exec reply %q: %w", raw, err)
	}
	for {
		raw, err := a.AgentCommand(ctx, dom, fmt.Sprintf(`{"execute":"guest-exec-status","arguments":{"pid":%d}}`, started.Return.PID))
		if err != nil {
			return "", err
		}
		var st struct {
			Return struct {
				Exited bool   `json:"exited"`
				Out    string `json:"out-data"`
			} `json:"return"`
		}
		if err := json.Unmarshal([]byte(raw), &st); err != nil {
			return "", fmt.Errorf("guest-exec-status reply %q: %w", raw, err)
		}
		if st.Return.Exited {
			out, err := base64.StdEncoding.DecodeString(st.Return.Out)
			return string(out), err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// TestRealStackHotplugVolumeSurvivesMigration hot-plugs a claim into the
// running tiny guest on libvirtd A (libvirt attach-device, live and
// config, on the virtio-scsi controller), sees the disk in the guest
// through its agent, live-migrates the guest to libvirtd B, sees the disk
// there still, and unplugs it. The claim is read-only: both daemons run
// on one host, where libvirt deems a writable local disk unsafe to
// migrate (it would need shared storage).
func TestRealStackHotplugVolumeSurvivesMigration(t *testing.T) {
	c, volumes := startHotplugCluster(t)
	v := tinyVMI("hotplug-tiny", 0)
	v.Namespace = "hotplug-realstack"
	vmi := c.bootOn(t, hotplugNodeA, hotplugNodeB, v)
	dom := node.DomainName(vmi.Namespace, vmi.Name)
	source := vmi.Status.NodeName

	// The claim: a 48 MiB raw image where the resolver looks for it.
	img := filepath.Join(volumes, "pvc", vmi.Namespace, "hotplug-claim.img")
	require.NoError(t, os.MkdirAll(filepath.Dir(img), 0o755))
	require.NoError(t, os.WriteFile(img, nil, 0o644))
	require.NoError(t, os.Truncate(img, 48<<20))
	const wantSectors = "98304" // 48 MiB / 512

	require.NoError(t, actions.AddVMIVolume(c.ctx, c.Store(), store.KeyOf(vmi), &virtkit.AddVolumeOptions{Name: "hp",
		Disk: &virtkit.Disk{Serial: "hotplug-serial", DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusSCSI}}},
		VolumeSource: &virtkit.HotplugVolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{
			ClaimName: "hotplug-claim", ReadOnly: true}}}))
	ready, err := c.WaitForVMI(c.ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		vs, ok := volumeStatus(v, "hp")
		return found && ok && vs.Phase == virtkit.VolumeReady
	})
	require.NoError(t, err, "the hot-plugged volume turns Ready")
	vs, _ := volumeStatus(ready, "hp")
	t.Logf("volumeStatus: %+v", vs)
	x, err := c.hv[source].XML(c.ctx, dom)
	require.NoError(t, err)
	assert.Contains(t, x, "ua-hp")

	sizeIn := func(node string) string {
		t.Helper()
		var out string
		require.Eventually(t, func() bool {
			ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
			defer cancel()
			o, err := guestShell(ctx, c.hv[node], dom, "cat /sys/block/"+vs.Target+"/size; cat /sys/block/"+vs.Target+"/device/model 2>/dev/null")
			out = strings.TrimSpace(o)
			return err == nil && strings.HasPrefix(out, wantSectors)
		}, 2*time.Minute, time.Second, "the guest sees /dev/%s of %s sectors on %s (last: %q)", vs.Target, wantSectors, node, out)
		return out
	}
	t.Logf("guest on %s: /dev/%s: %s", source, vs.Target, sizeIn(source))

	mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
	require.NoError(t, err)
	done := c.waitMigration(t, mig, func(m *virtkit.VirtualMachineInstanceMigration, found bool) bool { return found && m.IsFinal() })
	require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "state: %+v", done.Status.MigrationState)
	after, err := c.WaitForVMI(c.ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && v.Status.NodeName != source && len(v.Status.ActivePods) == 1 &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
	})
	require.NoError(t, err)
	target := after.Status.NodeName
	x, err = c.hv[target].XML(c.ctx, dom)
	require.NoError(t, err)
	assert.Contains(t, x, "ua-hp", "the target domain holds the hot-plugged disk")
	vs2, ok := volumeStatus(after, "hp")
	require.True(t, ok)
	assert.Equal(t, virtkit.VolumeReady, vs2.Phase)
	assert.Equal(t, vs.Target, vs2.Target)
	t.Logf("guest on %s after migration: /dev/%s: %s", target, vs.Target, sizeIn(target))

	// Unplugged on the target.
	require.NoError(t, actions.RemoveVMIVolume(c.ctx, c.Store(), store.KeyOf(vmi), &virtkit.RemoveVolumeOptions{Name: "hp"}))
	_, err = c.WaitForVMI(c.ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		_, ok := volumeStatus(v, "hp")
		return found && !ok
	})
	require.NoError(t, err, "the volume leaves the status once the domain released it")
	x, err = c.hv[target].XML(c.ctx, dom)
	require.NoError(t, err)
	assert.NotContains(t, x, "ua-hp")
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
		defer cancel()
		o, err := guestShell(ctx, c.hv[target], dom, "ls /sys/block")
		return err == nil && !strings.Contains(o, vs.Target)
	}, 2*time.Minute, time.Second, "the guest no longer sees /dev/%s", vs.Target)
}

// The real-stack hotplug test's nodes: names of their own, so the agents
// of other real-stack tests running at the same time on the same daemons
// (nodes rs-a, rs-b) leave its domains alone, and it theirs.
const (
	hotplugNodeA = "hotplug-a"
	hotplugNodeB = "hotplug-b"
)

// startHotplugCluster is startRealCluster's control plane with nodes
// hotplugNodeA (libvirtd A) and hotplugNodeB (libvirtd B); it returns the
// volume resolver's directory both nodes share.
func startHotplugCluster(t *testing.T) (*realCluster, string) {
	t.Helper()
	return startRealClusterWith(t, realClusterOptions{nodeA: hotplugNodeA, nodeB: hotplugNodeB,
		workPrefix: "virtkit-hotplug-", timeout: 12 * time.Minute, sharedVolumes: true,
		// Warnings (a failed attach, say) show in the test's output.
		logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
}

// bootOn boots v on node on (other cordoned meanwhile) and waits until it
// runs, may migrate and its agent answers.
func (c *realCluster) bootOn(t *testing.T, on, other string, v *virtkit.VirtualMachineInstance) *virtkit.VirtualMachineInstance {
	t.Helper()
	c.cordon(t, other, true)
	defer c.cordon(t, other, false)
	for try := 1; ; try++ {
		require.NoError(t, c.Apply(c.ctx, v.DeepCopy()))
		got, err := c.WaitForVMI(c.ctx, v.Namespace, v.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
			return found && (v.IsFinal() || v.IsRunning() && v.IsMigratable() &&
				virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected))
		})
		require.NoError(t, err, "the tiny guest boots and its agent answers")
		require.False(t, got.IsFinal(), "VMI ended: %s", got.Status.Phase)
		if got.Status.NodeName == on {
			return got
		}
		require.Less(t, try, 3, "placed on the cordoned %s %d times", other, try)
		require.NoError(t, c.Store().Delete(c.ctx, got, store.DeleteOptions{}))
		_, err = c.WaitForVMI(c.ctx, v.Namespace, v.Name, func(_ *virtkit.VirtualMachineInstance, found bool) bool { return !found })
		require.NoError(t, err)
	}
}
