package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/virtkit/virtkit"
	applycmd "github.com/virtkit/virtkit/cmd/virtkit/internal/apply"
	deletecmd "github.com/virtkit/virtkit/cmd/virtkit/internal/delete"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
	"github.com/virtkit/virtkit/controller"
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

func TestApplyGetDelete(t *testing.T) {
	st := kubetest.NewMemory(t)
	require.NoError(t, controller.EnsureNamespaces(t.Context(), st, "other", "nothing"))
	api := serveAt(t, st, time.Time{})
	out, errOut, err := applyString(t, api, twoVMs)
	require.NoError(t, err, errOut)
	assert.Equal(t, "virtualmachine.kubevirt.io/vm1 created\nvirtualmachine.kubevirt.io/vm2 created\n", out)
	out, errOut, err = applyString(t, api, twoVMs)
	require.NoError(t, err, errOut)
	assert.Equal(t, "virtualmachine.kubevirt.io/vm1 unchanged\nvirtualmachine.kubevirt.io/vm2 unchanged\n", out)

	get := func(name string, ns namespaceFlags, output string) string {
		t.Helper()
		var out bytes.Buffer
		require.NoError(t, runGet(t, api, &out, "VM", name, ns, output))
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

	var buf, errBuf bytes.Buffer
	err = runGet(t, api, &buf, "VM", "missing", namespaceFlags{namespace: "default"}, "json")
	require.True(t, apierrors.IsNotFound(err), "%v", err)

	require.NoError(t, runDelete(t, api, &buf, &errBuf, "VM", "other", []string{"vm2"}, ""))
	assert.Equal(t, "virtualmachine.kubevirt.io \"vm2\" deleted\n", buf.String())
	err = runDelete(t, api, &buf, &errBuf, "VM", "other", []string{"vm2"}, "")
	require.ErrorIs(t, err, deletecmd.ErrReported)
	assert.Contains(t, errBuf.String(), "Error from server (NotFound)")
}

func TestApplyRejectsInvalidObjects(t *testing.T) {
	st := kubetest.NewMemory(t)
	require.NoError(t, controller.EnsureNamespaces(t.Context(), st, "ns"))
	_, errOut, err := applyString(t, serveAt(t, st, time.Time{}), badVM)
	require.ErrorIs(t, err, applycmd.ErrReported)
	assert.Contains(t, errOut, "spec.template.spec.domain.devices.disks")
}
