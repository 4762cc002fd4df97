package main

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/metrics/wire"
	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd/etcdtest"
)

// TestStoreFlagsReportCorruptValues: a process that opens the store from
// its flags logs a corrupt value with its etcd key and exports it as a
// metric, and both forget it once the key is deleted.
func TestStoreFlagsReportCorruptValues(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	f := storeFlags{store: "etcd://" + strings.TrimPrefix(endpoints[0], "http://"), prefix: "/virtkit"}
	var logs bytes.Buffer
	st, err := f.open(t.Context(), slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, wire.RegisterControlPlane(reg, st, nil, metrics.Options{}))

	const key = "/virtkit/VirtualMachineInstance/default/zzpoison"
	_, err = st.Etcd.Put(t.Context(), key, "not json{")
	require.NoError(t, err)
	vmis := &virtkit.VirtualMachineInstanceList{}
	require.NoError(t, st.List(t.Context(), vmis, store.ListOptions{}), "`get vmis` works with a poisoned key")
	assert.Empty(t, vmis.Items)
	assert.Contains(t, logs.String(), "etcdKey="+key)

	want := `# HELP virtkit_store_undecodable_objects Stored objects the store skips because they are not valid objects for their key (1 per key; repair by rewriting or deleting the key).
# TYPE virtkit_store_undecodable_objects gauge
virtkit_store_undecodable_objects{key="` + key + `",kind="VirtualMachineInstance",reason="json"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "virtkit_store_undecodable_objects"))

	_, err = st.Etcd.Delete(t.Context(), key)
	require.NoError(t, err)
	require.NoError(t, st.List(t.Context(), vmis, store.ListOptions{}))
	n, err := testutil.GatherAndCount(reg, "virtkit_store_undecodable_objects")
	require.NoError(t, err)
	assert.Zero(t, n, "a deleted key clears its series")
}

// TestOneShotCommandsWarnAboutCorruptValues: `virtkit get vmis` opens the
// store without a logger; a value it skips is still named on stderr.
func TestOneShotCommandsWarnAboutCorruptValues(t *testing.T) {
	endpoints := etcdtest.StartServer(t)
	var stderr bytes.Buffer
	f := storeFlags{store: "etcd://" + strings.TrimPrefix(endpoints[0], "http://"), prefix: "/virtkit",
		stderr: func() io.Writer { return &stderr }}
	st, err := f.openShared(t.Context(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	const key = "/virtkit/VirtualMachineInstance/default/zzpoison"
	_, err = st.Etcd.Put(t.Context(), key, "not json{")
	require.NoError(t, err)
	require.NoError(t, st.List(t.Context(), &virtkit.VirtualMachineInstanceList{}, store.ListOptions{}))
	assert.Contains(t, stderr.String(), "level=WARN")
	assert.Contains(t, stderr.String(), "etcdKey="+key)
}
