package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
)

const twoVMs = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm1}
spec:
  runStrategy: Halted
  template:
    spec:
      domain:
        devices: {}
        memory: {guest: 64Mi}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm2, namespace: other}
spec:
  runStrategy: Halted
  template:
    spec:
      domain:
        devices: {}
        memory: {guest: 64Mi}
`

// applyString applies a manifest through the API over st and returns
// what apply printed.
func applyString(t *testing.T, c cli, manifest string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	require.NoError(t, os.WriteFile(path, []byte(manifest), 0o600))
	return c.ok("apply", "-f", path)
}

func TestApplyGetDelete(t *testing.T) {
	c := storeCLI(t, apiMemory(t))
	assert.Equal(t, "virtualmachine.kubevirt.io/vm1 created\nvirtualmachine.kubevirt.io/vm2 created\n", applyString(t, c, twoVMs))
	assert.Equal(t, "virtualmachine.kubevirt.io/vm1 unchanged\nvirtualmachine.kubevirt.io/vm2 unchanged\n", applyString(t, c, twoVMs))

	get := func(name string, ns namespaceFlags, output string) string {
		t.Helper()
		args := []string{"get", "VM"}
		if name != "" {
			args = append(args, name)
		}
		args = append(args, "-n", ns.namespace, "-o", output)
		if ns.allNamespaces {
			args = append(args, "-A")
		}
		return c.ok(args...)
	}

	for _, tc := range []struct {
		name  string
		ns    namespaceFlags
		items []string
	}{
		{"default namespace", namespaceFlags{namespace: "default"}, []string{"vm1"}},
		{"other namespace", namespaceFlags{namespace: "other"}, []string{"vm2"}},
		{"all namespaces", namespaceFlags{namespace: "default", allNamespaces: true}, []string{"vm1", "vm2"}},
		{"empty namespace", namespaceFlags{namespace: "nothing"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var list struct {
				APIVersion string                   `json:"apiVersion"`
				Kind       string                   `json:"kind"`
				Items      []virtkit.VirtualMachine `json:"items"`
			}
			require.NoError(t, json.Unmarshal([]byte(get("", tc.ns, "json")), &list))
			assert.Equal(t, "v1", list.APIVersion)
			assert.Equal(t, "List", list.Kind)
			require.NotNil(t, list.Items, "items is [] when empty, as kubectl prints it")
			var names []string
			for _, it := range list.Items {
				assert.Equal(t, virtkit.KindVirtualMachine, it.Kind)
				assert.Equal(t, virtkit.APIVersion, it.APIVersion)
				names = append(names, it.Name)
			}
			assert.Equal(t, tc.items, names)

			table := get("", tc.ns, "table")
			if len(tc.items) == 0 {
				assert.Equal(t, "No resources found in nothing namespace.\n", table)
				return
			}
			lines := strings.Split(strings.TrimSpace(table), "\n")
			assert.Len(t, lines, len(tc.items)+1)
			assert.Contains(t, lines[0], "NAME")
		})
	}

	one := get("vm1", namespaceFlags{namespace: "default"}, "yaml")
	objs, err := virtkit.DecodeBytes([]byte(one))
	require.NoError(t, err, one)
	require.Len(t, objs, 1)
	assert.Equal(t, "vm1", objs[0].GetName())
	table := get("vm1", namespaceFlags{namespace: "default"}, "table")
	assert.Contains(t, table, "vm1")
	assert.Equal(t, []string{"NAME", "AGE", "STATUS", "READY"}, strings.Fields(strings.SplitN(table, "\n", 2)[0]),
		"KubeVirt's columns, no NAMESPACE without -A, as kubectl prints them")
	all := get("", namespaceFlags{namespace: "default", allNamespaces: true}, "table")
	assert.Equal(t, []string{"NAMESPACE", "NAME", "AGE", "STATUS", "READY"}, strings.Fields(strings.SplitN(all, "\n", 2)[0]))
	assert.Contains(t, all, "other")

	assert.Contains(t, c.fails("get", "vm", "missing", "-o", "json"), "Error from server (NotFound)")
	assert.Equal(t, `virtualmachine.kubevirt.io "vm2" deleted`+"\n", c.ok("delete", "vm", "vm2", "-n", "other"))
	assert.Contains(t, c.fails("delete", "vm", "vm2", "-n", "other"), "Error from server (NotFound)")
}

// What users have typed for a kind, through the server's discovery and
// the CLI's own aliases.
func TestKindNamesResolve(t *testing.T) {
	c := storeCLI(t, apiMemory(t))
	for _, typed := range []string{"vms", "VirtualMachineInstances", "vmim", "migrations", "nodes", "replicasets", "vmirs",
		"no", "rs", "kv", "vmsnapshot", "migrationpolicies", "DataVolume", "dv"} {
		assert.NotContains(t, c.ok("get", typed, "-A"), "NAME", typed) // resolved, nothing listed
	}
	assert.Contains(t, c.fails("get", "pods"), `the server doesn't have a resource type "pods"`)
}

func TestApplyRejectsInvalidObjects(t *testing.T) {
	c := storeCLI(t, apiMemory(t))
	path := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(path, []byte(badVM), 0o600))
	assert.Contains(t, c.fails("apply", "-f", path), "spec.template.spec.domain.devices.disks")
}
