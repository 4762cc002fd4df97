package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The real-QEMU flags are checked before anything connects to a daemon.
func TestBenchMigrateRealFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte(`
- name: huge
  memory: 8Gi
  bandwidth: 1150M
  dirtyRate: 100M
  shape: hotset
  workingSet: 1Gi
`), 0o644))
	small := filepath.Join(dir, "small.yaml")
	require.NoError(t, os.WriteFile(small, []byte(`[{name: small, memory: 256Mi, bandwidth: 8Mi, dirtyRate: "0"}]`), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"libvirt flag on sim", []string{"--uri", "a,b"}, []string{"--uri: only with --hypervisor libvirt"}},
		{"tls on sim", []string{"--tls"}, []string{"--tls: only with --hypervisor libvirt"}},
		{"unknown hypervisor", []string{"--hypervisor", "xen"}, []string{`--hypervisor: "xen" is not sim or libvirt`}},
		{"plot on libvirt", []string{"--hypervisor", "libvirt", "--plot", "x.svg"}, []string{"--plot: only with --hypervisor sim"}},
		{"one URI", []string{"--hypervisor", "libvirt", "--uri", "qemu:///system"}, []string{"want SOURCE,TARGET"}},
		{"unrealisable profile", []string{"--hypervisor", "libvirt", "--profiles", bad},
			[]string{"profiles[0].memory", "profiles[0].shape", "invalid benchmark profile"}},
		{"max-time must be positive", []string{"--hypervisor", "libvirt", "--max-time", "0s"}, []string{"--max-time"}},
		{"repeat on sim", []string{"--repeat", "3"}, []string{"--repeat: only with --hypervisor libvirt"}},
		{"sample-passes on sim", []string{"--sample-passes", "20ms"}, []string{"--sample-passes: only with --hypervisor libvirt"}},
		{"sample-passes negative", []string{"--hypervisor", "libvirt", "--sample-passes", "-1s"}, []string{"--sample-passes: -1s is negative"}},
		{"repeat must be positive", []string{"--hypervisor", "libvirt", "--repeat", "0"}, []string{"--repeat: 0: want 1 or more"}},
		{"guest on sim", []string{"--guest", "debian"}, []string{"--guest: only with --hypervisor libvirt"}},
		{"unknown guest", []string{"--hypervisor", "libvirt", "--guest", "windows"}, []string{`--guest: "windows" is not tiny or debian`}},
		{"cloud image without the Debian guest", []string{"--hypervisor", "libvirt", "--cloud-image", dir}, []string{"--cloud-image: only with --guest debian"}},
		{"profile too small for the Debian guest", []string{"--hypervisor", "libvirt", "--guest", "debian", "--profiles", small},
			[]string{"profiles[0].memory", "from 512Mi to 2048Mi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(append([]string{"bench", "migrate"}, tc.args...))
			err := root.Execute()
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestRotatePolicies(t *testing.T) {
	ps := []string{"virtkit", "kubevirt", "nova"}
	for k, want := range [][]string{
		{"virtkit", "kubevirt", "nova"},
		{"kubevirt", "nova", "virtkit"},
		{"nova", "virtkit", "kubevirt"},
		{"virtkit", "kubevirt", "nova"},
	} {
		assert.Equal(t, want, rotate(ps, k), "run %d", k+1)
	}
	assert.Equal(t, []string{"virtkit", "kubevirt", "nova"}, ps, "the input is not changed")
}
