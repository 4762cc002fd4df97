package cluster_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/internal/testenv"
	"github.com/virtkit/virtkit/node"
)

const configVolumesManifest = `apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
data:
  DATABASE: staging
  app.properties: "mode=test\n"
---
apiVersion: v1
kind: Secret
metadata:
  name: app-secret
type: Opaque
data:
  PASSWORD: c2VjcmV0LXZhbHVl
stringData:
  USER: admin
---
apiVersion: v1
kind: Secret
metadata:
  name: user-data
stringData:
  userdata: "#cloud-config\nhostname: from-secret\n"
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: with-config
spec:
  domain:
    devices:
      disks:
      - name: root
        disk: {bus: virtio}
      - name: app-config
        disk: {}
      - name: app-secret
        disk: {}
      - name: cloudinit
        disk: {}
    resources:
      requests:
        memory: 64Mi
  volumes:
  - name: root
    emptyDisk: {capacity: 1Mi}
  - name: app-config
    configMap:
      name: app-config
  - name: app-secret
    secret:
      secretName: app-secret
      volumeLabel: secrets
  - name: cloudinit
    cloudInitNoCloud:
      secretRef:
        name: user-data
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: no-config
spec:
  domain:
    devices:
      disks:
      - name: cfg
        disk: {}
      - name: opt
        disk: {}
    resources:
      requests:
        memory: 64Mi
  volumes:
  - name: cfg
    configMap:
      name: not-there
  - name: opt
    secret:
      secretName: not-there-either
      optional: true
`

// A VMI with a configMap and a secret volume starts on a simulated node,
// and its ISOs, read back with isoinfo, hold the keys under the volume
// labels. A VMI whose ConfigMap is missing stays Scheduled with
// Synchronized=False ConfigVolumeMissing naming it, and starts once the
// ConfigMap is created. Cloud-init user data comes from a Secret too.
func TestConfigVolumesStart(t *testing.T) {
	isoinfo := testenv.LookTool(t, "isoinfo", "Debian genisoimage")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res := &domain.DirResolver{Dir: t.TempDir(), Create: true}
	c, err := cluster.New(cluster.Options{Domain: domain.Options{VolumeResolver: res}})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()

	objs, err := virtkit.DecodeBytes([]byte(configVolumesManifest))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, objs...))
	vmi, err := c.WaitForVMI(ctx, "default", "with-config", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)

	dir := res.VMIDir(vmi.Namespace, vmi.Name, string(vmi.UID))
	for _, tc := range []struct {
		volume, label string
		files         map[string]string
	}{
		{"app-config", virtkit.DefaultConfigVolumeLabel, map[string]string{"DATABASE": "staging", "app.properties": "mode=test\n"}},
		{"app-secret", "secrets", map[string]string{"PASSWORD": "secret-value", "USER": "admin"}},
		{"cloudinit", domain.NoCloudLabel, map[string]string{"user-data": "#cloud-config\nhostname: from-secret\n"}},
	} {
		img := filepath.Join(dir, tc.volume+".iso")
		out, err := exec.Command(isoinfo, "-d", "-i", img).CombinedOutput()
		require.NoError(t, err, string(out))
		assert.Contains(t, string(out), "Volume id: "+tc.label)
		for k, want := range tc.files {
			got, err := exec.Command(isoinfo, "-J", "-i", img, "-x", "/"+k).Output()
			require.NoError(t, err)
			assert.Equal(t, want, string(got), "%s: %s", tc.volume, k)
		}
	}

	vmi, err = c.WaitForVMI(ctx, "default", "no-config", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		return found && virtkit.HasCondition(v.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized, virtkit.ConditionFalse, node.ConfigVolumeMissingReason)
	})
	require.NoError(t, err)
	assert.Equal(t, virtkit.Scheduled, vmi.Status.Phase, "a missing ConfigMap keeps the VMI from starting")
	msg := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstanceSynchronized).Message
	assert.Contains(t, msg, "spec.volumes[0].configMap")
	assert.Contains(t, msg, "ConfigMap default/not-there not found")

	cm, err := virtkit.DecodeBytes([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-there}\ndata: {k: v}\n"))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, cm...))
	vmi, err = c.WaitForVMI(ctx, "default", "no-config", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	// The optional Secret is missing: an empty ISO.
	img := filepath.Join(res.VMIDir(vmi.Namespace, vmi.Name, string(vmi.UID)), "opt.iso")
	st, err := os.Stat(img)
	require.NoError(t, err)
	assert.Positive(t, st.Size())
	out, err := exec.Command(isoinfo, "-J", "-f", "-i", img).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Empty(t, string(out))
}
