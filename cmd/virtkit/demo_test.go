package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
)

func TestDemoWalksEveryStep(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runDemo(context.Background(), &out, &errOut, demoOptions{nodes: 2, hypervisor: "sim", output: "text", timeout: 2 * time.Minute})
	require.NoError(t, err, "stderr: %s\nstdout: %s", errOut.String(), out.String())
	text := out.String()
	for _, want := range []string{
		"ok  every node reports Ready",
		"ok  printableStatus Stopped",
		"ok  AgentConnected and guestOSInfo",
		"ok  printableStatus Paused",
		"ok  printableStatus Stopped and the VMI gone",
		"ok  4 ready replicas and 4 VMIs",
		"demo finished: every step reached its expected state",
	} {
		require.Contains(t, text, want)
	}
}

func TestDemoJSONOutputIsTheFinalObjects(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runDemo(context.Background(), &out, &errOut, demoOptions{nodes: 2, hypervisor: "sim", output: "json", timeout: 2 * time.Minute})
	require.NoError(t, err, errOut.String())
	var doc struct {
		VirtualMachines         []virtkit.VirtualMachine         `json:"virtualMachines"`
		VirtualMachineInstances []virtkit.VirtualMachineInstance `json:"virtualMachineInstances"`
		Nodes                   []virtkit.Node                   `json:"nodes"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc), "stdout must be one JSON document")
	require.Len(t, doc.VirtualMachines, 1)
	require.Equal(t, virtkit.VirtualMachineStatusRunning, doc.VirtualMachines[0].Status.PrintableStatus)
	require.Len(t, doc.Nodes, 2)
	require.NotEmpty(t, doc.VirtualMachineInstances)
}

func TestDemoRejectsBadFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	require.ErrorContains(t, runDemo(context.Background(), &out, &errOut, demoOptions{nodes: 0, hypervisor: "sim", output: "text"}), "--nodes")
	require.ErrorContains(t, runDemo(context.Background(), &out, &errOut, demoOptions{nodes: 1, hypervisor: "sim", output: "yaml"}), "--output")
	require.ErrorContains(t, runDemo(context.Background(), &out, &errOut, demoOptions{nodes: 1, hypervisor: "xen", output: "text", timeout: time.Second}), "--hypervisor")
}
