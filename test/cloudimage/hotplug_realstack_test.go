//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// TestRealHotplugVolume boots the Debian cloud image, hot-plugs a claim
// into it with addvolume (a disk on the virtio-scsi controller, attached
// live), finds the disk in the guest by its serial (lsblk through the
// guest agent), writes to it from the guest, and unplugs it again.
func TestRealHotplugVolume(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	var volumes string
	// A node of its own: the agents of other real-stack tests on the same
	// daemon (node img-a) leave its domain alone.
	const hotplugNode = "hotplug-img"
	c := startCluster(t, img, func(o *cluster.Options) {
		o.NodeNames = []string{hotplugNode}
		if r, ok := o.Domain.VolumeResolver.(*domain.DirResolver); ok {
			volumes = r.Dir
		}
	})
	require.NotEmpty(t, volumes)
	objs, vmi := loadVMIManifest(t, "testdata/nocloud.yaml")
	vmi.Name, vmi.Namespace = "hotplug-debian", "hotplug-cloud"
	vmi.Spec.Hostname = "hotplug-debian"
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout+5*time.Minute)
	defer cancel()
	require.NoError(t, c.Apply(ctx, objs...))
	bctx, bcancel := context.WithTimeout(ctx, bootTimeout)
	got, err := c.WaitForVMI(bctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && (v.IsFinal() || v.IsRunning() &&
			virtkit.IsConditionTrue(v.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected))
	})
	bcancel()
	require.NoError(t, err, "the Debian guest boots and its agent answers")
	require.False(t, got.IsFinal(), "VMI ended: %s", got.Status.Phase)
	opts := guestagent.Options{CallTimeout: 30 * time.Second}
	ac := c.Node(hotplugNode).Hypervisor.(hypervisor.AgentCommander)
	g := guest{c: guestagent.New(guestagent.NewPassthroughTransport(ac, domain.DomainName(got), opts), opts)}

	// The claim: a 64 MiB raw image where the node's resolver finds it.
	claim := filepath.Join(volumes, "pvc", vmi.Namespace, "hotplug-data.img")
	require.NoError(t, os.MkdirAll(filepath.Dir(claim), 0o755))
	require.NoError(t, os.WriteFile(claim, nil, 0o666))
	require.NoError(t, os.Truncate(claim, 64<<20))
	require.NoError(t, os.Chmod(claim, 0o666))

	const serial = "virtkit-hotplug"
	require.NoError(t, actions.AddVMIVolume(ctx, c.Store(), store.KeyOf(got), &virtkit.AddVolumeOptions{Name: "data",
		Disk: &virtkit.Disk{Serial: serial, DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusSCSI}}},
		VolumeSource: &virtkit.HotplugVolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{
			ClaimName: "hotplug-data", Hotpluggable: true}}}))
	ready, err := c.WaitForVMI(ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		for _, vs := range v.Status.VolumeStatus {
			if vs.Name == "data" && vs.Phase == virtkit.VolumeReady {
				return found
			}
		}
		return false
	})
	require.NoError(t, err, "the hot-plugged volume turns Ready")
	t.Logf("volumeStatus: %+v", ready.Status.VolumeStatus)

	// The guest sees a 64 MiB disk with the serial.
	var dev string
	require.Eventually(t, func() bool {
		r, err := g.exec(ctx, "/usr/bin/lsblk", "-dn", "-o", "NAME,SERIAL,SIZE", "-b")
		if err != nil || r.Code != 0 {
			return false
		}
		for _, line := range strings.Split(r.Stdout, "\n") {
			f := strings.Fields(line)
			if len(f) == 3 && f[1] == serial {
				dev = f[0]
				return f[2] == "67108864"
			}
		}
		return false
	}, 2*time.Minute, 2*time.Second, "lsblk in the guest lists the hot-plugged disk")
	t.Logf("guest: /dev/%s", dev)
	w, err := g.exec(ctx, "/bin/sh", "-c", "echo hotplugged | dd of=/dev/"+dev+" oflag=direct,sync bs=512 conv=sync status=none && head -c 10 /dev/"+dev)
	require.NoError(t, err)
	require.Equal(t, 0, w.Code, "%s", w.Stderr)
	assert.Equal(t, "hotplugged", w.Stdout)
	onHost, err := os.ReadFile(claim)
	require.NoError(t, err)
	assert.Equal(t, "hotplugged", string(onHost[:10]), "the guest's write reached the claim's image")

	// Unplugged: gone from the status, the domain and the guest.
	require.NoError(t, actions.RemoveVMIVolume(ctx, c.Store(), store.KeyOf(got), &virtkit.RemoveVolumeOptions{Name: "data"}))
	_, err = c.WaitForVMI(ctx, vmi.Namespace, vmi.Name, func(v *virtkit.VirtualMachineInstance, found bool) bool {
		for _, vs := range v.Status.VolumeStatus {
			if vs.Name == "data" {
				return false
			}
		}
		return found
	})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		r, err := g.exec(ctx, "/usr/bin/lsblk", "-dn", "-o", "NAME,SERIAL")
		return err == nil && r.Code == 0 && !strings.Contains(r.Stdout, serial)
	}, 2*time.Minute, 2*time.Second, "the guest no longer lists the disk")
}
