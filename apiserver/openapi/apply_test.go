package openapi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/managedfields/managedfieldstest"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit"
)

func applyConfig(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	return u
}

const applyVM = `
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm1
  namespace: default
`

// TestServerSideApply runs server-side apply over the VirtualMachine
// schema as the generic API server's field manager does: fields are owned
// per manager, a conflicting apply is refused unless forced, maps merge
// key by key, and disks (a list KubeVirt leaves unmarked) are replaced
// whole by the manager that owns them.
func TestServerSideApply(t *testing.T) {
	s := buildSpecs(t)
	tc, err := managedfields.NewTypeConverter(s.v3, false)
	require.NoError(t, err)
	fm := managedfieldstest.NewTestFieldManager(tc, virtkit.SchemeGroupVersion.WithKind(virtkit.KindVirtualMachine))

	require.NoError(t, fm.Apply(applyConfig(t, applyVM+`  labels: {team: a}
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        devices:
          disks:
          - name: root
            disk: {bus: virtio}
      volumes:
      - name: root
        containerDisk: {image: quay.io/containerdisks/fedora}
`), "alice", false))

	// Bob adds a label: maps merge, Alice's label stays.
	require.NoError(t, fm.Apply(applyConfig(t, applyVM+`  labels: {tier: web}
`), "bob", false))
	live := fm.Live().(*unstructured.Unstructured)
	assert.Equal(t, map[string]string{"team": "a", "tier": "web"}, live.GetLabels())

	// Bob may not take Alice's runStrategy without force.
	err = fm.Apply(applyConfig(t, applyVM+`spec:
  runStrategy: Halted
`), "bob", false)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "want a conflict, got %v", err)

	// Alice replaces her disk list: the list is atomic, so the new list is
	// the whole list.
	require.NoError(t, fm.Apply(applyConfig(t, applyVM+`  labels: {team: a}
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        devices:
          disks:
          - name: data
            disk: {bus: sata}
      volumes:
      - name: data
        emptyDisk: {capacity: 1Gi}
`), "alice", false))
	live = fm.Live().(*unstructured.Unstructured)
	disks, _, err := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "domain", "devices", "disks")
	require.NoError(t, err)
	require.Len(t, disks, 1)
	assert.Equal(t, "data", disks[0].(map[string]any)["name"])
	assert.Equal(t, map[string]string{"team": "a", "tier": "web"}, live.GetLabels())
	assert.Len(t, live.GetManagedFields(), 2, "one entry per manager")
}
