//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
)

// TestRealStackDemo runs the demo's whole walk on the two real libvirtd
// instances with the tiny TCG guest: start, the real qemu-ga's answers in
// VMI status, pause/unpause, stop/start, a ReplicaSet scaled, clean-up.
func TestRealStackDemo(t *testing.T) {
	libvirttest.RequireStack(t)
	var out, errOut bytes.Buffer
	err := runDemo(context.Background(), &out, &errOut, demoOptions{nodes: 2, hypervisor: "libvirt", output: "text", timeout: 6 * time.Minute})
	t.Log(out.String())
	require.NoError(t, err, errOut.String())
	text := out.String()
	require.Contains(t, text, "with 2 libvirt hosts")
	// The VM's data disk is imported through a DataVolume from the demo's
	// loopback server, progress shown while it runs.
	require.Contains(t, text, "datavolume default/tiny-vm-data  phase ImportInProgress")
	require.Contains(t, text, "datavolume default/tiny-vm-data  phase Succeeded        progress 100.00%")
	require.Contains(t, text, "condition:  DataVolumesReady=True AllDVsReady")
	require.Contains(t, text, "engine strategy: PreCopyCompleted", "the VM with its DataVolume live-migrates")
	// The guest OS comes from the real qemu-ga reading the guest's
	// /etc/os-release (hack/realstack/build-guest.sh writes it).
	require.Contains(t, text, "guest OS:   virtkit tiny guest")
	require.Contains(t, text, "condition:  AgentConnected=True")
	// The guest's IPv6 link-local address may or may not have passed its
	// duplicate-address detection when the agent is first read.
	require.Regexp(t, `ips 10\.0\.2\.15(,fe80::\S+)?  \(infoSource: domain, guest-agent\)`, text)
	require.Contains(t, text, "demo finished: every step reached its expected state")
	require.Contains(t, text, "ok  every VMI gone and its guest stopped")
}

// TestRealStackDemoJSON checks the final objects of a libvirt walk: the VM
// runs with the guest's own view in status.
func TestRealStackDemoJSON(t *testing.T) {
	libvirttest.RequireStack(t)
	var out, errOut bytes.Buffer
	err := runDemo(context.Background(), &out, &errOut, demoOptions{nodes: 1, hypervisor: "libvirt", output: "json", timeout: 6 * time.Minute})
	require.NoError(t, err, errOut.String())
	var doc struct {
		VirtualMachineInstances []virtkit.VirtualMachineInstance `json:"virtualMachineInstances"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	var vm *virtkit.VirtualMachineInstance
	for i := range doc.VirtualMachineInstances {
		if doc.VirtualMachineInstances[i].Name == "tiny-vm" {
			vm = &doc.VirtualMachineInstances[i]
		}
	}
	require.NotNil(t, vm)
	require.Equal(t, virtkit.Running, vm.Status.Phase)
	require.Equal(t, "virtkit-tiny", vm.Status.GuestOSInfo.ID)
	require.NotEmpty(t, vm.Status.GuestOSInfo.KernelRelease)
	require.True(t, virtkit.IsConditionTrue(vm.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected))
	// The real qemu-ga reports eth0 (hack/realstack/build-guest.sh gives it
	// 10.0.2.15); merged by MAC with the domain's NIC, as KubeVirt does.
	require.NotEmpty(t, vm.Status.Interfaces)
	require.Equal(t, virtkit.InfoSourceDomainAndGA, vm.Status.Interfaces[0].InfoSource)
	require.Equal(t, "default", vm.Status.Interfaces[0].Name)
	require.Equal(t, "eth0", vm.Status.Interfaces[0].InterfaceName)
	require.Equal(t, "10.0.2.15", vm.Status.Interfaces[0].IP)
}
