package domain_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

func TestHostPathPolicyCheck(t *testing.T) {
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	require.NoError(t, os.MkdirAll(allowed, 0o755))
	outside := filepath.Join(dir, "outside")
	require.NoError(t, os.MkdirAll(outside, 0o755))
	require.NoError(t, os.Symlink(outside, filepath.Join(allowed, "escape")))
	require.NoError(t, os.Symlink(filepath.Join(outside, "missing"), filepath.Join(allowed, "dangling")))
	require.NoError(t, os.Symlink(allowed, filepath.Join(dir, "alias")))
	policy := domain.HostPathPolicy{Allow: []string{allowed}}

	for _, tc := range []struct {
		name, path string
		policy     domain.HostPathPolicy
		want       string // resolved path; "" means refused
	}{
		{"default allows nothing", "/dev/vda", domain.HostPathPolicy{}, ""},
		{"default refuses even allowed-looking paths", filepath.Join(allowed, "d.img"), domain.HostPathPolicy{}, ""},
		{"unclean path", "/../../etc/shadow", domain.HostPathPolicy{Allow: []string{"/"}}, ""},
		{"dot-dot out of prefix", allowed + "/../outside/d.img", policy, ""},
		{"relative", "d.img", policy, ""},
		{"below prefix", filepath.Join(allowed, "sub", "d.img"), policy, filepath.Join(allowed, "sub", "d.img")},
		{"the prefix itself", allowed, policy, allowed},
		{"sibling with the prefix as string prefix", allowed + "x/d.img", policy, ""},
		{"symlink escaping the prefix", filepath.Join(allowed, "escape", "d.img"), policy, ""},
		{"dangling symlink", filepath.Join(allowed, "dangling"), policy, ""},
		{"symlink into the prefix", filepath.Join(dir, "alias", "d.img"), policy, filepath.Join(allowed, "d.img")},
		{"device outside", "/dev/vda", policy, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.policy.Check(tc.path)
			if tc.want == "" {
				require.ErrorIs(t, err, domain.ErrHostPathDenied)
				assert.Contains(t, err.Error(), "allow-host-path")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestHostDiskPolicyInBuild: a hostDisk outside the policy fails the build
// naming the field and the policy, and DiskOrCreate creates nothing.
func TestHostDiskPolicyInBuild(t *testing.T) {
	dir := t.TempDir()
	allowed := filepath.Join(dir, "allowed")
	outside := filepath.Join(dir, "cron.d")
	require.NoError(t, os.MkdirAll(allowed, 0o755))
	require.NoError(t, os.Symlink(dir, filepath.Join(allowed, "up")))

	build := func(path string, policy domain.HostPathPolicy) error {
		vmi := decodeVMI(t, "testdata/vmi/cloudinit.yaml")
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, virtkit.Volume{Name: "host", VolumeSource: virtkit.VolumeSource{
			HostDisk: &virtkit.HostDisk{Path: path, Type: virtkit.HostDiskExistsOrCreate, Capacity: resource.MustParse("1Mi")}}})
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks,
			virtkit.Disk{Name: "host", DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusVirtio}}})
		res := &domain.DirResolver{Dir: filepath.Join(dir, "work"), Create: true, Images: map[string]string{"quay.io/containerdisks/fedora:40": writeBase(t, dir)}}
		_, err := domain.BuildXML(vmi, domain.Options{VolumeResolver: res, RuntimeDir: filepath.Join(dir, "run"), HostPaths: policy})
		return err
	}

	for _, p := range []string{filepath.Join(outside, "pwn"), filepath.Join(allowed, "up", "cron.d", "pwn")} {
		err := build(p, domain.HostPathPolicy{Allow: []string{allowed}})
		require.ErrorIs(t, err, domain.ErrHostPathDenied, p)
		assert.Contains(t, err.Error(), "spec.volumes[")
		assert.Contains(t, err.Error(), ".hostDisk.path")
		assert.Contains(t, err.Error(), "allow-host-path: "+allowed)
		_, statErr := os.Stat(outside)
		assert.True(t, os.IsNotExist(statErr), "DiskOrCreate created %s outside the allowed prefix", outside)
	}
	require.ErrorIs(t, build(filepath.Join(allowed, "d.img"), domain.HostPathPolicy{}), domain.ErrHostPathDenied)

	require.NoError(t, build(filepath.Join(allowed, "sub", "d.img"), domain.HostPathPolicy{Allow: []string{allowed}}))
	st, err := os.Stat(filepath.Join(allowed, "sub", "d.img"))
	require.NoError(t, err)
	assert.Equal(t, int64(1<<20), st.Size())
}

func writeBase(t *testing.T, dir string) string {
	t.Helper()
	base := filepath.Join(dir, "base.raw")
	require.NoError(t, os.WriteFile(base, make([]byte, 1<<20), 0o644))
	return base
}
