package domain_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// goldenConfig resolves the config volumes of testdata/vmi/config-volumes.yaml.
var goldenConfig = domain.StaticConfig{
	"configMap/default/app-config":   {"DATABASE": []byte("staging")},
	"secret/default/app-secret":      {"PASSWORD": []byte("s3cret")},
	"serviceAccount/default/default": {"namespace": []byte("default")},
}

// capture records the ISO images a build asks the resolver to write.
type capture struct {
	domain.DirResolver
	images map[string]*domain.CloudInitImage
	reqs   map[string]domain.VolumeRequest
}

func (c *capture) ResolveVolume(ctx context.Context, req domain.VolumeRequest) (domain.HostVolume, error) {
	if c.images == nil {
		c.images, c.reqs = map[string]*domain.CloudInitImage{}, map[string]domain.VolumeRequest{}
	}
	c.images[req.Volume], c.reqs[req.Volume] = req.CloudInit, req
	return c.DirResolver.ResolveVolume(ctx, req)
}

func files(img *domain.CloudInitImage) map[string]string {
	out := map[string]string{}
	for _, f := range img.Files {
		out[f.Path] = string(f.Data)
	}
	return out
}

func TestBuildConfigVolumes(t *testing.T) {
	vmi := decodeVMI(t, "testdata/vmi/config-volumes.yaml")
	vmi.Annotations = map[string]string{"team": "a \"b\""}
	vmi.Spec.Volumes[4].DownwardAPI.Fields = append(vmi.Spec.Volumes[4].DownwardAPI.Fields,
		virtkit.DownwardAPIVolumeFile{Path: "meta/name", FieldRef: &virtkit.ObjectFieldSelector{FieldPath: "metadata.name"}},
		virtkit.DownwardAPIVolumeFile{Path: "team", FieldRef: &virtkit.ObjectFieldSelector{FieldPath: "metadata.annotations['team']"}},
		virtkit.DownwardAPIVolumeFile{Path: "annotations", FieldRef: &virtkit.ObjectFieldSelector{FieldPath: "metadata.annotations"}})
	res := &capture{}
	dom, err := domain.Build(vmi, domain.Options{VolumeResolver: res, ConfigResolver: goldenConfig})
	require.NoError(t, err)

	assert.Equal(t, virtkit.DefaultConfigVolumeLabel, res.images["app-config"].Label)
	assert.Equal(t, map[string]string{"DATABASE": "staging"}, files(res.images["app-config"]))
	assert.Equal(t, "secrets", res.images["app-secret"].Label)
	assert.Equal(t, map[string]string{"PASSWORD": "s3cret"}, files(res.images["app-secret"]))
	assert.Equal(t, map[string]string{"namespace": "default"}, files(res.images["sa"]))
	assert.Equal(t, map[string]string{
		"labels": `app="web"`, "meta/name": "config-volumes", "team": `a "b"`, "annotations": `team="a \"b\""`,
	}, files(res.images["podinfo"]))
	for _, v := range []string{"app-config", "app-secret", "sa", "podinfo"} {
		assert.True(t, res.reqs[v].ReadOnly, v)
	}

	// Every config disk is a raw file without discard, read-only unless it
	// is a SATA disk (which QEMU cannot make read-only).
	disks := dom.Devices.Disks
	require.Len(t, disks, 5)
	for _, d := range disks[1:] {
		require.NotNil(t, d.Source.File, d.Target.Dev)
		assert.True(t, strings.HasSuffix(d.Source.File.File, ".iso"), d.Source.File.File)
		if d.Device == "disk" && d.Target.Bus == "sata" {
			assert.Nil(t, d.ReadOnly, d.Target.Dev)
		} else {
			assert.NotNil(t, d.ReadOnly, d.Target.Dev)
		}
		assert.Equal(t, "raw", d.Driver.Type)
		assert.Empty(t, d.Driver.Discard)
	}
	assert.Equal(t, "CVLY623300HK240D", disks[1].Serial)
}

func TestBuildConfigVolumeErrors(t *testing.T) {
	tests := []struct {
		name   string
		opts   domain.Options
		edit   func(v *virtkit.VirtualMachineInstance)
		is     error
		path   string
		absent string
	}{
		{name: "no resolver", opts: domain.Options{}, is: domain.ErrNotResolved, path: "spec.volumes[1].configMap"},
		{name: "missing ConfigMap", opts: domain.Options{ConfigResolver: domain.StaticConfig{}},
			is: domain.ErrConfigSourceMissing, path: "spec.volumes[1].configMap: configMap default/app-config not found"},
		{name: "missing Secret does not leak other data", opts: domain.Options{ConfigResolver: domain.StaticConfig{
			"configMap/default/app-config":   {"k": []byte("v")},
			"serviceAccount/default/default": {},
		}}, is: domain.ErrConfigSourceMissing, path: "spec.volumes[2].secret", absent: "s3cret"},
		{name: "label too long", opts: domain.Options{ConfigResolver: goldenConfig},
			edit: func(v *virtkit.VirtualMachineInstance) {
				v.Spec.Volumes[2].Secret.VolumeLabel = strings.Repeat("l", 17)
			},
			path: "spec.volumes[2]: volumeLabel"},
		{name: "data too big", opts: domain.Options{ConfigResolver: domain.StaticConfig{
			"configMap/default/app-config":   {"big": make([]byte, domain.MaxConfigImageBytes+1)},
			"secret/default/app-secret":      {},
			"serviceAccount/default/default": {},
		}}, path: "spec.volumes[1]: 4194308 bytes of data"},
		{name: "downward API field", opts: domain.Options{ConfigResolver: goldenConfig},
			edit: func(v *virtkit.VirtualMachineInstance) {
				v.Spec.Volumes[4].DownwardAPI.Fields[0].FieldRef.FieldPath = "spec.nodeName"
			}, is: virtkit.ErrNotSupported, path: "spec.volumes[4].downwardAPI.fields[0].fieldRef.fieldPath"},
		{name: "downward API path", opts: domain.Options{ConfigResolver: goldenConfig},
			edit: func(v *virtkit.VirtualMachineInstance) { v.Spec.Volumes[4].DownwardAPI.Fields[0].Path = "a/../../x" },
			path: "spec.volumes[4].downwardAPI.fields[0].path"},
		{name: "downward API fieldRef", opts: domain.Options{ConfigResolver: goldenConfig},
			edit: func(v *virtkit.VirtualMachineInstance) { v.Spec.Volumes[4].DownwardAPI.Fields[0].FieldRef = nil },
			path: "spec.volumes[4].downwardAPI.fields[0].fieldRef"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			vmi := decodeVMI(t, "testdata/vmi/config-volumes.yaml")
			if tc.edit != nil {
				tc.edit(vmi)
			}
			_, err := domain.Build(vmi, tc.opts)
			require.Error(t, err)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Contains(t, err.Error(), tc.path)
			if tc.absent != "" {
				assert.NotContains(t, err.Error(), tc.absent)
			}
		})
	}
}

// An optional ConfigMap or Secret that does not exist is an empty image.
func TestBuildConfigVolumeOptional(t *testing.T) {
	vmi := decodeVMI(t, "testdata/vmi/config-volumes.yaml")
	vmi.Spec.Volumes[1].ConfigMap.Optional = ptr(true)
	vmi.Spec.Volumes[2].Secret.Optional = ptr(true)
	res := &capture{}
	_, err := domain.Build(vmi, domain.Options{VolumeResolver: res, ConfigResolver: domain.StaticConfig{"serviceAccount/default/default": {}}})
	require.NoError(t, err)
	assert.Empty(t, res.images["app-config"].Files)
	assert.Empty(t, res.images["app-secret"].Files)
	assert.Equal(t, "secrets", res.images["app-secret"].Label)
}

// Cloud-init data from a Secret (secretRef, networkDataSecretRef), read
// through the ConfigResolver under KubeVirt's keys.
func TestBuildCloudInitSecretRef(t *testing.T) {
	vmi := decodeVMI(t, "testdata/vmi/cloudinit.yaml")
	vmi.Spec.Volumes[1].CloudInitNoCloud = &virtkit.CloudInitNoCloudSource{
		UserDataSecretRef:    &virtkit.LocalObjectReference{Name: "user"},
		NetworkDataSecretRef: &virtkit.LocalObjectReference{Name: "net"},
	}
	cfg := domain.StaticConfig{
		"secret/default/user": {"userdata": []byte("#cloud-config\nhostname: a\n"), "userData": []byte("ignored")},
		"secret/default/net":  {"networkData": []byte("version: 2\n")},
	}
	res := &capture{}
	_, err := domain.Build(vmi, domain.Options{VolumeResolver: res, ConfigResolver: cfg})
	require.NoError(t, err)
	got := files(res.images["nocloud"])
	assert.Equal(t, "#cloud-config\nhostname: a\n", got["user-data"])
	assert.Equal(t, "version: 2\n", got["network-config"])

	delete(cfg, "secret/default/net")
	_, err = domain.Build(vmi, domain.Options{VolumeResolver: res, ConfigResolver: cfg})
	require.ErrorIs(t, err, domain.ErrConfigSourceMissing)
	assert.Contains(t, err.Error(), "spec.volumes[1].cloudInitNoCloud.networkDataSecretRef")

	cfg["secret/default/net"] = map[string][]byte{"other": []byte("x")}
	_, err = domain.Build(vmi, domain.Options{VolumeResolver: res, ConfigResolver: cfg})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "has no key networkdata or networkData")
}

// A sysprep volume is an ISO labelled unattendCD holding the answer file.
func TestBuildSysprep(t *testing.T) {
	vmi := decodeVMI(t, "testdata/vmi/config-volumes.yaml")
	vmi.Spec.Volumes[1].ConfigMap = nil
	vmi.Spec.Volumes[1].Sysprep = &virtkit.SysprepSource{ConfigMap: &virtkit.LocalObjectReference{Name: "answers"}}
	cfg := domain.StaticConfig{
		"configMap/default/answers":      {"Autounattend.xml": []byte("<unattend/>")},
		"secret/default/app-secret":      {},
		"serviceAccount/default/default": {},
	}
	res := &capture{}
	_, err := domain.Build(vmi, domain.Options{VolumeResolver: res, ConfigResolver: cfg})
	require.NoError(t, err)
	assert.Equal(t, virtkit.SysprepVolumeLabel, res.images["app-config"].Label)
	assert.Equal(t, map[string]string{"Autounattend.xml": "<unattend/>"}, files(res.images["app-config"]))
	assert.Equal(t, domain.VolumeSysprep, res.reqs["app-config"].Kind)

	cfg["configMap/default/answers"] = map[string][]byte{"other.xml": nil}
	_, err = domain.Build(vmi, domain.Options{VolumeResolver: res, ConfigResolver: cfg})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.volumes[1].sysprep.configMap: configMap default/answers has neither autounattend.xml nor unattend.xml")

	vmi.Spec.Volumes[1].Sysprep.Secret = &virtkit.LocalObjectReference{Name: "s"}
	_, err = domain.Build(vmi, domain.Options{VolumeResolver: res, ConfigResolver: cfg})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.volumes[1].sysprep: configMap and secret are mutually exclusive")

	vmi.Spec.Volumes[1].Sysprep = &virtkit.SysprepSource{}
	_, err = domain.Build(vmi, domain.Options{VolumeResolver: res, ConfigResolver: cfg})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.volumes[1].sysprep: one of configMap or secret is required")
}
