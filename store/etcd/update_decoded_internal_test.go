package etcd

import (
	"bufio"
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// etcdRanges reads etcd's count of range requests from its metrics.
func etcdRanges(t *testing.T, endpoint string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, endpoint+"/metrics", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "etcd_mvcc_range_total "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatal("etcd_mvcc_range_total not in etcd's metrics")
	return 0
}

// An update of an object at a version this process has decoded (a
// reconcile writes what it read) goes straight to the conditional write,
// without reading the key first; a stale or a deleted object still fails
// as it would after a read.
func TestUpdateOfDecodedVersionSkipsTheRead(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	s, err := New(t.Context(), Options{Endpoints: endpoints, Prefix: "/upd"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	key := store.Key{Namespace: "ns", Name: "v"}
	require.NoError(t, s.Create(ctx, &virtkit.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "v"}}))
	vmi := &virtkit.VirtualMachineInstance{}
	require.NoError(t, s.Get(ctx, key, vmi))

	before := etcdRanges(t, endpoints[0])
	vmi.Status.Phase = virtkit.Scheduled
	require.NoError(t, s.UpdateStatus(ctx, vmi))
	// etcd counts one range for the conditional write itself; a read
	// before it would be a second.
	assert.Equal(t, 1.0, etcdRanges(t, endpoints[0])-before, "ranges for an update of the version just read")

	got := &virtkit.VirtualMachineInstance{}
	require.NoError(t, s.Get(ctx, key, got))
	assert.Equal(t, virtkit.Scheduled, got.Status.Phase)
	assert.Equal(t, vmi.ResourceVersion, got.ResourceVersion)

	// Stale: someone wrote since got was read.
	stale := got.DeepCopy()
	got.Labels = map[string]string{"a": "b"}
	require.NoError(t, s.Update(ctx, got))
	stale.Status.Phase = virtkit.Running
	require.ErrorIs(t, s.UpdateStatus(ctx, stale), store.ErrConflict)

	// Deleted since it was read.
	require.NoError(t, s.Get(ctx, key, got))
	require.NoError(t, s.Delete(ctx, got.DeepCopy(), store.DeleteOptions{}))
	got.Status.Phase = virtkit.Running
	require.ErrorIs(t, s.UpdateStatus(ctx, got), store.ErrNotFound)
}
