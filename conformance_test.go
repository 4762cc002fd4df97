package virtkit

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conformanceExpectations says, for every manifest of KubeVirt's examples
// directory, whether virtkit accepts it (decode + default + validate clean)
// or which unsupported field it names. CONFORMANCE.md is the same table.
var conformanceExpectations = map[string]string{
	"example-migration-policy.yaml": "",
	"migration-job.yaml":            "",
	"vm-alpine-datavolume.yaml":     "",
	"vm-alpine-multipvc.yaml":       "",
	"vm-cirros-sata.yaml":           "",
	"vm-cirros.yaml":                "",
	"vm-priorityclass.yaml":         "",
	"vmi-alpine-efi.yaml":           "",
	"vmi-arm.yaml":                  "",
	"vmi-ephemeral.yaml":            "",
	"vmi-fedora-isolated.yaml":      "",
	"vmi-fedora.yaml":               "",
	"vmi-host-disk.yaml":            "",
	"vmi-kernel-boot.yaml":          "",
	"vmi-masquerade.yaml":           "",
	"vmi-migratable.yaml":           "",
	"vmi-multus-multiple-net.yaml":  "",
	"vmi-multus-ptp.yaml":           "",
	"vmi-nocloud.yaml":              "",
	"vmi-pvc.yaml":                  "",
	"vmi-replicaset-cirros.yaml":    "",
	"vmi-sata.yaml":                 "",
	"vmi-secureboot.yaml":           "",
	"vmi-sriov.yaml":                "",
	"vmi-usb.yaml":                  "",
	"vmi-windows.yaml":              "",
}

func TestConformanceKubeVirtExamples(t *testing.T) {
	files := corpusFiles(t)
	seen := map[string]bool{}
	accepted := 0
	for _, f := range files {
		name := filepath.Base(f)
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			want, known := conformanceExpectations[name]
			require.True(t, known, "no expectation for %s: add it to the table and CONFORMANCE.md", name)
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			objs, err := DecodeBytes(data)
			if want != "" {
				require.Error(t, err, "expected %s to be rejected", want)
				var de *DecodeError
				require.True(t, errors.As(err, &de))
				assert.Equal(t, want, de.Path)
				assert.ErrorIs(t, err, ErrUnknownField)
				return
			}
			require.NoError(t, err)
			require.NotEmpty(t, objs)
			for _, obj := range objs {
				SetDefaults(obj)
				assert.Empty(t, Validate(obj))
			}
			accepted++
		})
	}
	for name := range conformanceExpectations {
		assert.True(t, seen[name], "%s is in the table but not in the corpus", name)
	}
	assert.GreaterOrEqual(t, accepted, 20)
	t.Logf("%d of %d KubeVirt examples accepted", accepted, len(files))
}
