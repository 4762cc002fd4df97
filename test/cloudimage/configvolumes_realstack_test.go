//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// TestRealConfigVolumes boots the Debian cloud image with a configMap and
// a secret volume, each an ISO9660 disk labelled with its volumeLabel,
// and reads a key of each in the guest: the disks are found by label,
// mounted and read through the guest agent (guest-exec).
func TestRealConfigVolumes(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	objs, vmi := loadVMIManifest(t, "testdata/configvolumes.yaml")

	c := startCluster(t, img)
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout+2*time.Minute)
	defer cancel()
	_, g := bootVMI(ctx, t, c, vmi, objs...)

	// What the guest sees: the disks with their serials and labels.
	r, err := g.exec(ctx, "/bin/lsblk", "-o", "NAME,SERIAL,LABEL,FSTYPE,RO,SIZE")
	require.NoError(t, err)
	t.Logf("guest block devices:\n%s%s", r.Stdout, r.Stderr)
	for _, tc := range []struct {
		label, dir, key, want string
	}{
		{"appcfg", "/mnt/appcfg", "greeting", "hello from a ConfigMap"},
		{"appcfg", "/mnt/appcfg", "app.properties", "mode=production\nreplicas=3\n"},
		{"appsecret", "/mnt/appsecret", "password", "s3cret-from-a-Secret"},
	} {
		// Found by its label, probed directly (no blkid cache, no udev).
		script := "set -e; mkdir -p " + tc.dir + "; mountpoint -q " + tc.dir +
			" || { dev=$(blkid -c /dev/null -t LABEL=" + tc.label + " -o device); mount -o ro \"$dev\" " + tc.dir + "; }; cat " + tc.dir + "/" + tc.key
		r, err := g.exec(ctx, "/bin/sh", "-c", script)
		require.NoError(t, err)
		require.Equal(t, 0, r.Code, "%s: %s", tc.key, r.Stderr)
		assert.Equal(t, tc.want, r.Stdout, "key %s of the disk labelled %s", tc.key, tc.label)
	}
	// The guest sees the ISOs as read-only-mounted iso9660 file systems.
	r, err = g.exec(ctx, "/bin/sh", "-c", "grep -E ' /mnt/app(cfg|secret) ' /proc/mounts")
	require.NoError(t, err)
	require.Equal(t, 0, r.Code, r.Stderr)
	for _, l := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		f := strings.Fields(l)
		require.Len(t, f, 6, l)
		assert.Equal(t, "iso9660", f[2], l)
		assert.True(t, strings.HasPrefix(f[3], "ro"), l)
	}
	t.Logf("guest mounts:\n%s", r.Stdout)
}

// TestRealVirtiofs boots the Debian cloud image with a ConfigMap and a
// downwardAPI volume shared by virtiofs: the node runs a virtiofsd per
// share, the guest mounts each by its tag and reads the files through the
// guest agent; the VMI is not live-migratable (libvirt refuses it).
func TestRealVirtiofs(t *testing.T) {
	parallelLane(t)
	img := requireCloudStack(t)
	objs, vmi := loadVMIManifest(t, "testdata/virtiofs.yaml")

	c := startCluster(t, img)
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout+2*time.Minute)
	defer cancel()
	got, g := bootVMI(ctx, t, c, vmi, objs...)
	hv := c.Node(nodeName).Hypervisor
	mig := virtkit.GetCondition(got.Status.Conditions, virtkit.VirtualMachineInstanceIsMigratable)
	require.NotNil(t, mig)
	assert.Equal(t, virtkit.VirtIOFSNotLiveMigratableReason, mig.Reason)

	xml, err := hv.XML(ctx, domain.DomainName(got))
	require.NoError(t, err)
	assert.Contains(t, xml, "<driver type='virtiofs' queue='1024'/>")
	assert.Contains(t, xml, "<target dir='app-config'/>")

	for _, tc := range []struct{ tag, key, want string }{
		{"app-config", "greeting", "hello over virtiofs"},
		{"podinfo", "labels", `app="shared"`},
	} {
		dir := "/mnt/" + tc.tag
		r, err := g.exec(ctx, "/bin/sh", "-c", "set -e; mkdir -p "+dir+"; mountpoint -q "+dir+" || mount -t virtiofs "+tc.tag+" "+dir+"; cat "+dir+"/"+tc.key)
		require.NoError(t, err)
		require.Equal(t, 0, r.Code, "%s: %s", tc.tag, r.Stderr)
		if tc.tag == "podinfo" { // with the labels virtkit adds (the node's name)
			assert.Contains(t, strings.Split(r.Stdout, "\n"), tc.want, "file %s of the share %s", tc.key, tc.tag)
		} else {
			assert.Equal(t, tc.want, r.Stdout, "file %s of the share %s", tc.key, tc.tag)
		}
	}
	r, err := g.exec(ctx, "/bin/sh", "-c", "grep ' virtiofs ' /proc/mounts")
	require.NoError(t, err)
	t.Logf("guest mounts:\n%s", r.Stdout)
}
