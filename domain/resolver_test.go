package domain_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/internal/testenv"
)

// TestDirResolverCreate builds a VMI with every file-backed volume kind
// through a DirResolver that creates files, then checks the files with
// the real tools.
func TestDirResolverCreate(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.raw")
	require.NoError(t, os.WriteFile(base, bytes.Repeat([]byte{0xAB}, 1<<20), 0o644))
	pvc := filepath.Join(dir, "pvc", "default", "data.img")
	require.NoError(t, os.MkdirAll(filepath.Dir(pvc), 0o755))
	require.NoError(t, os.WriteFile(pvc, make([]byte, 4096), 0o644))
	hostDisk := filepath.Join(dir, "host", "disk.img")

	vmi := decodeVMI(t, "testdata/vmi/cloudinit.yaml")
	vmi.Spec.Volumes = append(vmi.Spec.Volumes,
		virtkit.Volume{Name: "scratch", VolumeSource: virtkit.VolumeSource{EmptyDisk: &virtkit.EmptyDiskSource{Capacity: resource.MustParse("3Gi")}}},
		virtkit.Volume{Name: "data", VolumeSource: virtkit.VolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
		virtkit.Volume{Name: "host", VolumeSource: virtkit.VolumeSource{HostDisk: &virtkit.HostDisk{
			Path: hostDisk, Type: virtkit.HostDiskExistsOrCreate, Capacity: resource.MustParse("64Mi"),
		}}},
	)
	for _, n := range []string{"scratch", "data", "host"} {
		vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks,
			virtkit.Disk{Name: n, DiskDevice: virtkit.DiskDevice{Disk: &virtkit.DiskTarget{Bus: virtkit.DiskBusVirtio}}})
	}
	res := &domain.DirResolver{Dir: dir, Create: true, Images: map[string]string{"quay.io/containerdisks/fedora:40": base}}
	opts := domain.Options{VolumeResolver: res, RuntimeDir: filepath.Join(dir, "run"),
		HostPaths: domain.HostPathPolicy{Allow: []string{filepath.Join(dir, "host")}}}

	doc1, err := domain.BuildXML(vmi, opts)
	require.NoError(t, err)
	vmiDir := res.VMIDir("default", "cloudinit", "")
	iso1, err := os.ReadFile(filepath.Join(vmiDir, "nocloud.iso"))
	require.NoError(t, err)
	doc2, err := domain.BuildXML(vmi, opts)
	require.NoError(t, err)
	iso2, err := os.ReadFile(filepath.Join(vmiDir, "nocloud.iso"))
	require.NoError(t, err)
	assert.Equal(t, doc1, doc2, "a second build over existing files gives the same document")
	assert.Equal(t, iso1, iso2, "ISOs are byte for byte reproducible")

	assert.Contains(t, doc1, `<source file="`+filepath.Join(vmiDir, "root.qcow2")+`">`)
	assert.Contains(t, doc1, `<source file="`+base+`">`)
	st, err := os.Stat(hostDisk)
	require.NoError(t, err)
	assert.Equal(t, int64(64<<20), st.Size())
	validateXML(t, doc1)

	qemuImg := testenv.LookTool(t, "qemu-img", "Debian qemu-utils")
	for _, f := range []string{"root.qcow2", "scratch.qcow2"} {
		out, err := exec.Command(qemuImg, "check", filepath.Join(vmiDir, f)).CombinedOutput()
		require.NoError(t, err, "%s: %s", f, out)
	}
	// The overlay reads through to the base image.
	out, err := exec.Command(qemuImg, "compare", "-f", "qcow2", "-F", "raw", filepath.Join(vmiDir, "root.qcow2"), base).CombinedOutput()
	require.NoError(t, err, string(out))

	isoinfo := testenv.LookTool(t, "isoinfo", "Debian genisoimage")
	ud, err := exec.Command(isoinfo, "-J", "-i", filepath.Join(vmiDir, "nocloud.iso"), "-x", "/user-data").Output()
	require.NoError(t, err)
	assert.Equal(t, vmi.Spec.Volumes[1].CloudInitNoCloud.UserData, string(ud))
	nd, err := exec.Command(isoinfo, "-J", "-i", filepath.Join(vmiDir, "nocloud.iso"), "-x", "/network-config").Output()
	require.NoError(t, err)
	assert.Equal(t, vmi.Spec.Volumes[1].CloudInitNoCloud.NetworkData, string(nd))
	cd, err := exec.Command(isoinfo, "-J", "-i", filepath.Join(vmiDir, "configdrive.iso"), "-x", "/openstack/latest/user_data").Output()
	require.NoError(t, err)
	assert.Equal(t, "#!/bin/sh\necho hello\n", string(cd))
	label, err := exec.Command(isoinfo, "-d", "-i", filepath.Join(vmiDir, "configdrive.iso")).Output()
	require.NoError(t, err)
	assert.Contains(t, string(label), "Volume id: config-2")
}

func TestDirResolverMissing(t *testing.T) {
	dir := t.TempDir()
	res := &domain.DirResolver{Dir: dir, Create: true}
	ctx := context.Background()
	_, err := res.ResolveVolume(ctx, domain.VolumeRequest{Namespace: "ns", VMIName: "v", Volume: "d", Kind: domain.VolumePersistentVolumeClaim, ClaimName: "nope"})
	assert.ErrorIs(t, err, domain.ErrNotResolved)
	_, err = res.ResolveVolume(ctx, domain.VolumeRequest{Namespace: "ns", VMIName: "v", Volume: "d", Kind: domain.VolumeContainerDisk, Image: "missing:1"})
	assert.ErrorIs(t, err, domain.ErrNotResolved)
	_, err = res.ResolveKernel(ctx, domain.KernelRequest{Image: "k:1", KernelPath: "/boot/vmlinuz"})
	assert.ErrorIs(t, err, domain.ErrNotResolved)
	_, err = res.ResolveVolume(ctx, domain.VolumeRequest{Kind: "memoryDump"})
	assert.ErrorIs(t, err, domain.ErrUnsupported)
	_, err = res.ResolveVolume(ctx, domain.VolumeRequest{Kind: domain.VolumeConfigMap})
	assert.ErrorIs(t, err, domain.ErrNotResolved, "a config volume without a prepared image")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = res.ResolveVolume(cancelled, domain.VolumeRequest{Kind: domain.VolumeEmptyDisk, Capacity: 1})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestDirResolverPaths(t *testing.T) {
	res := &domain.DirResolver{Dir: "/w"}
	ctx := context.Background()
	for _, tc := range []struct {
		req  domain.VolumeRequest
		want domain.HostVolume
	}{
		{domain.VolumeRequest{Namespace: "ns", VMIName: "v", UID: "u1", Volume: "root", Kind: domain.VolumeContainerDisk, Image: "reg/img:tag"},
			domain.HostVolume{Type: domain.SourceFile, Path: "/w/vmis/u1/root.qcow2", Format: "qcow2", BackingPath: "/w/images/reg_img_tag.img", BackingFormat: "raw"}},
		{domain.VolumeRequest{Namespace: "ns", VMIName: "v", Volume: "root", Kind: domain.VolumeContainerDisk, Image: "reg/img", ImagePath: "/disk/x.qcow2"},
			domain.HostVolume{Type: domain.SourceFile, Path: "/w/vmis/ns_v/root.qcow2", Format: "qcow2", BackingPath: "/w/images/reg_img/disk/x.qcow2", BackingFormat: "qcow2"}},
		{domain.VolumeRequest{Namespace: "ns", Kind: domain.VolumeDataVolume, ClaimName: "dv"},
			domain.HostVolume{Type: domain.SourceFile, Path: "/w/dv/ns/dv.img", Format: "raw"}},
		{domain.VolumeRequest{Kind: domain.VolumeHostDisk, Path: "/dev/vg0/lv"},
			domain.HostVolume{Type: domain.SourceBlock, Path: "/dev/vg0/lv", Format: "raw"}},
		{domain.VolumeRequest{Namespace: "../..", VMIName: "x", Volume: "../e", Kind: domain.VolumeEmptyDisk},
			domain.HostVolume{Type: domain.SourceFile, Path: "/w/vmis/.._.._x/.._e.qcow2", Format: "qcow2"}},
	} {
		got, err := res.ResolveVolume(ctx, tc.req)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got)
	}
	k, err := res.ResolveKernel(ctx, domain.KernelRequest{Image: "reg/k:1", KernelPath: "boot/vmlinuz", InitrdPath: "/boot/initrd"})
	require.NoError(t, err)
	assert.Equal(t, domain.HostKernel{Kernel: "/w/kernels/reg_k_1/boot/vmlinuz", Initrd: "/w/kernels/reg_k_1/boot/initrd"}, k)
}

func TestNetResolver(t *testing.T) {
	ctx := context.Background()
	got, err := (&domain.NetResolver{}).ResolveNetwork(ctx, domain.NetworkRequest{Kind: domain.NetworkPod, Binding: "masquerade"})
	require.NoError(t, err)
	assert.Equal(t, domain.HostNetwork{Type: domain.AttachUser}, got)
	got, err = (&domain.NetResolver{PodNetwork: "default"}).ResolveNetwork(ctx, domain.NetworkRequest{Kind: domain.NetworkPod, Binding: "bridge"})
	require.NoError(t, err)
	assert.Equal(t, domain.HostNetwork{Type: domain.AttachNetwork, Source: "default"}, got)
	_, err = (&domain.NetResolver{}).ResolveNetwork(ctx, domain.NetworkRequest{Kind: domain.NetworkPod, Binding: "sriov"})
	assert.ErrorIs(t, err, domain.ErrNotResolved)
	_, err = (&domain.NetResolver{}).ResolveNetwork(ctx, domain.NetworkRequest{Kind: domain.NetworkMultus, MultusNetworkName: "x"})
	assert.ErrorIs(t, err, domain.ErrNotResolved)
	fallback := &domain.NetResolver{LibvirtNetworkFallback: true}
	got, err = fallback.ResolveNetwork(ctx, domain.NetworkRequest{Kind: domain.NetworkMultus, Binding: "bridge", MultusNetworkName: "team/ptp-conf"})
	require.NoError(t, err)
	assert.Equal(t, domain.HostNetwork{Type: domain.AttachNetwork, Source: "ptp-conf"}, got)
	_, err = fallback.ResolveNetwork(ctx, domain.NetworkRequest{Kind: domain.NetworkMultus, Binding: "sriov", MultusNetworkName: "team/vf"})
	assert.ErrorIs(t, err, domain.ErrNotResolved)
}
