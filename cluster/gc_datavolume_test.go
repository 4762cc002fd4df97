package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// A VM's template DataVolumes follow its deletion's propagation policy:
// Orphan leaves them without the owner reference, Foreground and
// Background delete them.
func TestDeletePropagationDataVolumes(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.New(cluster.Options{Storage: cluster.StorageOptions{Dir: t.TempDir(), ImportRetries: 1}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	defer func() { cancel(); <-done }()

	for _, tc := range []struct {
		name   string
		policy metav1.DeletionPropagation
	}{
		{"orphan", metav1.DeletePropagationOrphan},
		{"foreground", metav1.DeletePropagationForeground},
		{"background", metav1.DeletePropagationBackground},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := virtkit.DecodeBytes(fmt.Appendf(nil, dvVMManifest, "dv-"+tc.name, srv.URL+"/missing.qcow2"))
			require.NoError(t, err)
			require.NoError(t, c.Apply(ctx, objs...))
			dvKey := store.Key{Namespace: "default", Name: "dv-" + tc.name + "-root"}
			newDV := func() *virtkit.DataVolume { return &virtkit.DataVolume{} }
			_, err = cluster.WaitFor(ctx, c.Store(), dvKey, newDV, &virtkit.DataVolumeList{},
				func(dv *virtkit.DataVolume, found bool) bool { return found && len(dv.OwnerReferences) == 1 })
			require.NoError(t, err)

			vm := &virtkit.VirtualMachine{}
			require.NoError(t, c.Store().Get(ctx, store.Key{Namespace: "default", Name: "dv-" + tc.name}, vm))
			p := tc.policy
			require.NoError(t, c.Store().Delete(ctx, vm, store.DeleteOptions{PropagationPolicy: &p}))
			_, err = cluster.WaitFor(ctx, c.Store(), store.KeyOf(vm), func() *virtkit.VirtualMachine { return &virtkit.VirtualMachine{} },
				&virtkit.VirtualMachineList{}, cluster.Gone[*virtkit.VirtualMachine]())
			require.NoError(t, err, "the VM goes")
			if tc.policy != metav1.DeletePropagationOrphan {
				_, err = cluster.WaitFor(ctx, c.Store(), dvKey, newDV, &virtkit.DataVolumeList{}, cluster.Gone[*virtkit.DataVolume]())
				require.NoError(t, err, "the DataVolume goes")
				return
			}
			dv := newDV()
			require.NoError(t, c.Store().Get(ctx, dvKey, dv), "the orphaned DataVolume stays")
			assert.Empty(t, dv.OwnerReferences)
			assert.Nil(t, dv.DeletionTimestamp)
			require.NoError(t, c.Settle(ctx))
			require.NoError(t, cluster.CheckOwnersAndFinalizers(ctx, c))
		})
	}
}
