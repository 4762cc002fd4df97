package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/manifest"
	"github.com/virtkit/virtkit/store"
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

func applyString(t *testing.T, st store.Store, text string) string {
	t.Helper()
	objs, err := manifest.Decode(strings.NewReader(text), []string{"-"})
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, runApply(t.Context(), st, &out, objs))
	return out.String()
}

func TestApplyGetDelete(t *testing.T) {
	st := store.NewMemory()
	assert.Equal(t, "virtualmachine/vm1 created\nvirtualmachine/vm2 created\n", applyString(t, st, twoVMs))
	assert.Equal(t, "virtualmachine/vm1 configured\nvirtualmachine/vm2 configured\n", applyString(t, st, twoVMs))

	vms, err := lookupResource("VM")
	require.NoError(t, err)
	get := func(name string, ns namespaceFlags, output string) string {
		t.Helper()
		var out bytes.Buffer
		require.NoError(t, runGet(t.Context(), st, &out, vms, name, ns, output, time.Now()))
		return out.String()
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

	var out bytes.Buffer
	err = runGet(t.Context(), st, &out, vms, "missing", namespaceFlags{namespace: "default"}, "json", time.Now())
	require.ErrorIs(t, err, store.ErrNotFound)

	require.NoError(t, runDelete(t.Context(), st, &out, vms, "other", []string{"vm2"}))
	assert.Equal(t, "virtualmachine/vm2 deleted\n", out.String())
	err = runDelete(t.Context(), st, &out, vms, "other", []string{"vm2"})
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestLookupResource(t *testing.T) {
	for _, tc := range []struct{ typed, kind string }{
		{"vms", virtkit.KindVirtualMachine},
		{"VirtualMachineInstances", virtkit.KindVirtualMachineInstance},
		{"vmim", virtkit.KindVirtualMachineInstanceMigration},
		{"migrations", virtkit.KindVirtualMachineInstanceMigration},
		{"nodes", virtkit.KindNode},
		{"replicasets", virtkit.KindVirtualMachineInstanceReplicaSet},
		{"vmirs", virtkit.KindVirtualMachineInstanceReplicaSet},
		{"no", virtkit.KindNode},
		// Every kind of the kind table, by its names (virtkit.NamesOf).
		{"kv", virtkit.KindKubeVirt},
		{"vmsnapshot", virtkit.KindVirtualMachineSnapshot},
		{"migrationpolicies", virtkit.KindMigrationPolicy},
		{"DataVolume", virtkit.KindDataVolume},
	} {
		r, err := lookupResource(tc.typed)
		require.NoError(t, err, tc.typed)
		assert.Equal(t, tc.kind, r.Kind, tc.typed)
	}
	_, err := lookupResource("pods")
	require.ErrorIs(t, err, errUnknownResource)
}

func TestApplyRejectsInvalidObjects(t *testing.T) {
	objs, err := manifest.Decode(strings.NewReader(badVM), []string{"-"})
	require.NoError(t, err)
	var out bytes.Buffer
	err = runApply(t.Context(), store.NewMemory(), &out, objs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.template.spec.domain.devices.disks")
}
