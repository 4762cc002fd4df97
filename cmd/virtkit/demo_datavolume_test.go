package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const demoDataVolumeVM = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: dv-vm
  namespace: default
spec:
  runStrategy: Halted
  dataVolumeTemplates:
  - metadata:
      name: dv-vm-data
    spec:
      source:
        http:
          url: http://%s/tiny-data.qcow2
      storage:
        resources:
          requests:
            storage: 64Mi
  template:
    spec:
      domain:
        memory:
          guest: 128Mi
        devices:
          disks:
          - name: data
            disk:
              bus: virtio
      volumes:
      - name: data
        dataVolume:
          name: dv-vm-data
`

// The demo's disk server feeds a real import (qemu-img converts its qcow2)
// slowly enough that the walk shows the DataVolume's progress before the VM
// starts with the imported disk.
func TestDemoShowsDataVolumeImport(t *testing.T) {
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img not installed (Debian qemu-utils)")
	}
	ctx := context.Background()
	host, stop, err := serveDemoDisk(ctx)
	require.NoError(t, err)
	defer stop()
	f := filepath.Join(t.TempDir(), "vm.yaml")
	require.NoError(t, os.WriteFile(f, fmt.Appendf(nil, demoDataVolumeVM, host), 0o644))

	var out, errOut bytes.Buffer
	err = runDemo(ctx, &out, &errOut, demoOptions{files: []string{f}, nodes: 1, hypervisor: "sim", output: "text", timeout: 2 * time.Minute})
	require.NoError(t, err, "stderr: %s\nstdout: %s", errOut.String(), out.String())
	text := out.String()
	for _, want := range []string{
		"Import the DataVolumes of default/dv-vm (dataVolumeTemplates)",
		"datavolume default/dv-vm-data  phase ImportInProgress",
		"datavolume default/dv-vm-data  phase Succeeded        progress 100.00%",
		"condition:  DataVolumesReady=True AllDVsReady",
		"demo finished: every step reached its expected state",
	} {
		require.Contains(t, text, want)
	}
}
