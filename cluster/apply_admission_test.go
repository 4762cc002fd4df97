package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

const admitVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: v, namespace: default}
spec:
  nodeSelector: {nowhere: "true"}
  domain:
    devices: {}
    memory: {guest: 128Mi}
status:
  phase: Scheduled
  nodeName: n1
`

func decodeVMI(t *testing.T, manifest string) *virtkit.VirtualMachineInstance {
	t.Helper()
	objs, err := virtkit.DecodeBytes([]byte(manifest))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	return objs[0].(*virtkit.VirtualMachineInstance)
}

func TestApplyDropsStatusOnCreate(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory()
	require.NoError(t, cluster.Apply(ctx, mem, decodeVMI(t, admitVMI)))
	var got virtkit.VirtualMachineInstance
	require.NoError(t, mem.Get(ctx, store.Key{Namespace: "default", Name: "v"}, &got))
	assert.Empty(t, got.Status.NodeName, "status.nodeName from a manifest must not place the VMI")
	assert.Empty(t, got.Status.Phase)
}

func TestApplyVMISpecImmutable(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory()
	require.NoError(t, cluster.Apply(ctx, mem, decodeVMI(t, admitVMI)))
	key := store.Key{Namespace: "default", Name: "v"}
	var before virtkit.VirtualMachineInstance
	require.NoError(t, mem.Get(ctx, key, &before))

	// The same manifest again is no change (the firmware UUID drawn at
	// creation is kept), and a status in it does not reach the store.
	require.NoError(t, cluster.Apply(ctx, mem, decodeVMI(t, admitVMI)))

	bigger := decodeVMI(t, admitVMI)
	bigger.Spec.Domain.Memory.Guest = ptr(resource.MustParse("2Gi"))
	err := cluster.Apply(ctx, mem, bigger)
	require.ErrorIs(t, err, cluster.ErrInvalidObject)
	assertFieldErrors(t, err, "spec.domain.memory.guest", field.ErrorTypeForbidden,
		"spec.domain.memory.maxGuest", field.ErrorTypeForbidden) // the hot-plug room defaulted from memory.guest

	var after virtkit.VirtualMachineInstance
	require.NoError(t, mem.Get(ctx, key, &after))
	assert.Equal(t, before.Generation, after.Generation)
	assert.Equal(t, "128Mi", after.Spec.Domain.Memory.Guest.String())
	assert.Empty(t, after.Status.NodeName)
}

func TestApplyReservedLabels(t *testing.T) {
	ctx := t.Context()
	mem := store.NewMemory()
	vmi := decodeVMI(t, admitVMI)
	vmi.Labels = map[string]string{virtkit.NodeNameLabel: "n1"}
	err := cluster.Apply(ctx, mem, vmi)
	require.ErrorIs(t, err, cluster.ErrInvalidObject)
	assertFieldErrors(t, err, "metadata.labels[kubevirt.io/nodeName]", field.ErrorTypeForbidden)
	var got virtkit.VirtualMachineInstance
	require.True(t, errors.Is(mem.Get(ctx, store.Key{Namespace: "default", Name: "v"}, &got), store.ErrNotFound))

	// A controller set the label on the stored VMI: re-applying what `get
	// -o yaml` printed keeps it, changing it is refused.
	require.NoError(t, cluster.Apply(ctx, mem, decodeVMI(t, admitVMI)))
	require.NoError(t, mem.Get(ctx, store.Key{Namespace: "default", Name: "v"}, &got))
	got.Labels = map[string]string{virtkit.NodeNameLabel: "n1"}
	require.NoError(t, mem.Update(ctx, &got))
	exported := decodeVMI(t, admitVMI)
	exported.Labels = map[string]string{virtkit.NodeNameLabel: "n1", "team": "a"}
	require.NoError(t, cluster.Apply(ctx, mem, exported))
	moved := decodeVMI(t, admitVMI)
	moved.Labels = map[string]string{virtkit.NodeNameLabel: "n2"}
	err = cluster.Apply(ctx, mem, moved)
	require.ErrorIs(t, err, cluster.ErrInvalidObject)
	assertFieldErrors(t, err, "metadata.labels[kubevirt.io/nodeName]", field.ErrorTypeForbidden)
	require.NoError(t, mem.Get(ctx, store.Key{Namespace: "default", Name: "v"}, &got))
	assert.Equal(t, map[string]string{virtkit.NodeNameLabel: "n1", "team": "a"}, got.Labels)
}

func ptr[T any](v T) *T { return &v }

// assertFieldErrors checks that err carries exactly these field errors,
// given as path, type pairs, in any order.
func assertFieldErrors(t *testing.T, err error, want ...any) {
	t.Helper()
	var wantPairs, got []string
	for i := 0; i+1 < len(want); i += 2 {
		wantPairs = append(wantPairs, fmt.Sprintf("%s %s", want[i], want[i+1]))
	}
	for _, e := range cluster.FieldErrors(err) {
		got = append(got, fmt.Sprintf("%s %s", e.Field, e.Type))
	}
	assert.ElementsMatch(t, wantPairs, got, "%v", err)
}

// The reported attack end to end: a VMI whose manifest claims it is
// Scheduled on node-1 while its nodeSelector matches no node must end up
// Unschedulable, never on node-1.
func TestApplyStatusCannotPlaceAVMI(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := cluster.New(cluster.Options{NodeNames: []string{"n1"}})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()
	require.NoError(t, c.Apply(ctx, decodeVMI(t, admitVMI)))
	vmi, err := c.WaitForVMI(ctx, "default", "v", func(v *virtkit.VirtualMachineInstance, found bool) bool {
		if !found {
			return false
		}
		cond := virtkit.GetCondition(v.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
		return v.Status.NodeName != "" || (cond != nil && cond.Reason == virtkit.PodReasonUnschedulable)
	})
	require.NoError(t, err)
	assert.Empty(t, vmi.Status.NodeName)
	assert.NotEqual(t, virtkit.Running, vmi.Status.Phase)
}

// Re-applying the manifest of a running VMI is no change: nothing the
// controllers or the node agent write counts as a spec change.
func TestApplySameManifestToARunningVMI(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c, err := cluster.New(cluster.Options{NodeNames: []string{"n1"}})
	require.NoError(t, err)
	go func() { _ = c.Start(ctx) }()
	manifest := strings.Replace(admitVMI, "  nodeSelector: {nowhere: \"true\"}\n", "", 1)
	require.NoError(t, c.Apply(ctx, decodeVMI(t, manifest)))
	_, err = c.WaitForVMI(ctx, "default", "v", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	require.NoError(t, c.Apply(ctx, decodeVMI(t, manifest)))
	vmi, err := c.WaitForVMI(ctx, "default", "v", cluster.VMIPhaseIs(virtkit.Running))
	require.NoError(t, err)
	assert.Equal(t, "n1", vmi.Status.NodeName)
	assert.Equal(t, "n1", vmi.Labels[virtkit.NodeNameLabel], "the controller's label is kept")
}
