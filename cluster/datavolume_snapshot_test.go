package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

func snapshotDV(name, snapshot string) *virtkit.DataVolume {
	return &virtkit.DataVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.CDISchemeGroupVersion.String(), Kind: virtkit.KindDataVolume},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: virtkit.DataVolumeSpec{
			Source: &virtkit.DataVolumeImportSource{Snapshot: &virtkit.DataVolumeSourceSnapshot{Name: snapshot}},
			Storage: &virtkit.PersistentVolumeClaimSpec{Resources: virtkit.VolumeResourceRequirements{
				Requests: virtkit.ResourceList{virtkit.ResourceStorage: resource.MustParse("4Mi")}}},
		},
	}
}

// A DataVolume whose source.snapshot names a volume snapshot a
// VirtualMachineSnapshot took is filled with the snapshot's data (not the
// volume's later data). One naming a snapshot that does not exist waits
// with CDI's CloneWithoutSource conditions and event.
func TestDataVolumeFromVolumeSnapshot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e := newCloneEnv(t, ctx, cluster.Options{})
	e.applyVM(ctx, "db", "Halted")
	e.writeOffline(ctx, "db-root", "s1")
	snap := e.snapshot(ctx, "db-snap", "db")
	e.writeOffline(ctx, "db-root", "s2")
	volumeSnapshot := virtkit.VolumeSnapshotName(string(snap.UID), "root")

	require.NoError(t, e.c.Apply(ctx, snapshotDV("from-snap", volumeSnapshot)))
	dv := e.waitDV(ctx, "from-snap")
	assert.Equal(t, virtkit.DataVolumeSucceeded, dv.Status.Phase)
	assert.Equal(t, "s1", e.readMarker(ctx, "from-snap"), "the DataVolume holds the snapshot's data")
	assert.Equal(t, "s2", e.readMarker(ctx, "db-root"), "the source volume is untouched")

	// A snapshot that does not exist: the DataVolume waits.
	require.NoError(t, e.c.Apply(ctx, snapshotDV("waits", "no-such-snapshot")))
	got, err := cluster.WaitFor(ctx, e.c.Store(), store.Key{Namespace: "default", Name: "waits"},
		func() *virtkit.DataVolume { return &virtkit.DataVolume{} }, &virtkit.DataVolumeList{},
		func(dv *virtkit.DataVolume, found bool) bool {
			c := dv.Status.Condition(virtkit.DataVolumeBound)
			return found && c != nil && c.Reason == virtkit.DataVolumeReasonCloneWithoutSource
		})
	require.NoError(t, err)
	bound := got.Status.Condition(virtkit.DataVolumeBound)
	assert.Equal(t, virtkit.ConditionUnknown, bound.Status)
	assert.Equal(t, "The source snapshot no-such-snapshot doesn't exist", bound.Message)
	ready := got.Status.Condition(virtkit.DataVolumeReady)
	require.NotNil(t, ready)
	assert.Equal(t, virtkit.ConditionFalse, ready.Status)
	assert.Equal(t, virtkit.DataVolumePending, got.Status.Phase)
	e.hasEvent(ctx, virtkit.DataVolumeReasonCloneWithoutSource)
}

// The source.snapshot is admitted (a name is required) and its namespace
// defaults to the DataVolume's.
func TestDataVolumeSnapshotSourceAdmission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e := newCloneEnv(t, ctx, cluster.Options{})
	err := e.c.Apply(ctx, snapshotDV("no-name", ""))
	require.ErrorIs(t, err, cluster.ErrInvalidObject)
	fes := cluster.FieldErrors(err)
	require.Len(t, fes, 1)
	assert.Equal(t, "spec.source.snapshot.name", fes[0].Field)

	require.NoError(t, e.c.Apply(ctx, snapshotDV("named", "some")))
	dv := &virtkit.DataVolume{}
	require.NoError(t, e.c.Store().Get(ctx, store.Key{Namespace: "default", Name: "named"}, dv))
	assert.Equal(t, "default", dv.Spec.Source.Snapshot.Namespace)
}
