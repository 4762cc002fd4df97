package apiserver_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
)

// A create writes no status for a kind with a status subresource, whoever
// sends it, as the apiextensions server drops it for such a custom
// resource: the status is the controllers' to write through /status.
func TestGenericCreateResetsStatus(t *testing.T) {
	ts := startGeneric(t, apiserver.GenericOptions{})
	dc, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		gvr      string
		manifest string
		status   map[string]any
		stored   func(t *testing.T) any
	}{
		{"vmi", "virtualmachineinstances", vmiManifest,
			map[string]any{"phase": "Running", "nodeName": "n1", "runtimeUser": int64(107)},
			func(t *testing.T) any {
				o := &virtkit.VirtualMachineInstance{}
				require.NoError(t, ts.Store.Get(t.Context(), store.Key{Namespace: "default", Name: "vmi1"}, o))
				return o.Status
			}},
		{"vm", "virtualmachines", vmManifest("default", "vm1", "Halted"),
			map[string]any{"printableStatus": "Running", "ready": true, "created": true},
			func(t *testing.T) any {
				o := &virtkit.VirtualMachine{}
				require.NoError(t, ts.Store.Get(t.Context(), store.Key{Namespace: "default", Name: "vm1"}, o))
				return o.Status
			}},
		{"snapshot content", "virtualmachinesnapshotcontents", `apiVersion: snapshot.kubevirt.io/v1beta1
kind: VirtualMachineSnapshotContent
metadata: {name: c1, namespace: default}
spec:
  virtualMachineSnapshotName: s1
  source:
    virtualMachine:
      metadata: {name: vm1}
`,
			map[string]any{"readyToUse": true},
			func(t *testing.T) any {
				o := &virtkit.VirtualMachineSnapshotContent{}
				require.NoError(t, ts.Store.Get(t.Context(), store.Key{Namespace: "default", Name: "c1"}, o))
				return o.Status
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := unstructuredOf(t, tc.manifest)
			require.NoError(t, unstructured.SetNestedMap(u.Object, tc.status, "status"))
			gv := u.GroupVersionKind().GroupVersion()
			out, err := dc.Resource(gv.WithResource(tc.gvr)).Namespace("default").Create(t.Context(), u, metav1.CreateOptions{})
			require.NoError(t, err)
			for field := range tc.status {
				v, found, _ := unstructured.NestedFieldNoCopy(out.Object, "status", field)
				assert.False(t, found && !reflect.ValueOf(v).IsZero(), "status.%s was kept: %v", field, out.Object["status"])
			}
			stored := tc.stored(t)
			assert.Zero(t, stored, "the stored status")
		})
	}
}
