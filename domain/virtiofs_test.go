package domain_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

func TestShares(t *testing.T) {
	vmi := decodeVMI(t, "testdata/vmi/virtiofs.yaml")
	opts := domain.Options{RuntimeDir: "/run/vk", ConfigResolver: goldenConfig}
	shares, err := domain.Shares(context.Background(), vmi, opts)
	require.NoError(t, err)
	require.Len(t, shares, 2)
	dir := domain.VirtiofsDir(vmi, opts)
	assert.Equal(t, domain.Share{
		Name: "app-config", Field: "spec.domain.devices.filesystems[0]", Kind: domain.VolumeConfigMap,
		Dir: filepath.Join(dir, "app-config"), Socket: filepath.Join(dir, "app-config.sock"),
		Files: []domain.ConfigFile{{Path: "DATABASE", Data: []byte("staging")}},
	}, shares[0])
	assert.Equal(t, domain.VolumeDownwardAPI, shares[1].Kind)
	assert.Equal(t, []domain.ConfigFile{{Path: "name", Data: []byte("virtiofs")}}, shares[1].Files)

	// The domain's sockets are the shares' sockets.
	dom, err := domain.Build(vmi, opts)
	require.NoError(t, err)
	require.Len(t, dom.Devices.Filesystems, 2)
	for i, fs := range dom.Devices.Filesystems {
		assert.Equal(t, shares[i].Socket, fs.Source.Mount.Socket)
		assert.Equal(t, shares[i].Name, fs.Target.Dir)
	}
	// Config volumes shared by virtiofs are no disks.
	assert.Len(t, dom.Devices.Disks, 1)
}

func TestSharesRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*virtkit.VirtualMachineInstance)
		want   string
		is     error
	}{
		{"a PVC", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Volumes[1].VolumeSource = virtkit.VolumeSource{PersistentVolumeClaim: &virtkit.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}
		}, "spec.domain.devices.filesystems[0]: volume \"app-config\": only configMap", domain.ErrUnsupported},
		{"no volume", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Filesystems[1].Name = "nothing"
		}, "spec.domain.devices.filesystems[1].name: no volume named \"nothing\"", nil},
		{"a missing ConfigMap", func(v *virtkit.VirtualMachineInstance) {
			v.Spec.Volumes[1].ConfigMap.Name = "gone"
		}, "spec.volumes[1].configMap", domain.ErrConfigSourceMissing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := decodeVMI(t, "testdata/vmi/virtiofs.yaml")
			tc.mutate(vmi)
			opts := domain.Options{ConfigResolver: goldenConfig}
			_, err := domain.Shares(context.Background(), vmi, opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			if tc.is != domain.ErrConfigSourceMissing { // Build reads no content
				_, err = domain.Build(vmi, opts)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.want)
			}
		})
	}
}
