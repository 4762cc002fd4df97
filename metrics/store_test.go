package metrics

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/promcheck"
	"github.com/virtkit/virtkit/store"
)

type fakeCorrupt struct {
	mu   sync.Mutex
	objs []store.CorruptError
}

func (f *fakeCorrupt) CorruptObjects() []store.CorruptError {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.CorruptError(nil), f.objs...)
}

func (f *fakeCorrupt) set(objs ...store.CorruptError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.objs = objs
}

func TestStoreCollector(t *testing.T) {
	src := &fakeCorrupt{}
	c, err := NewStoreCollector(src, Options{})
	require.NoError(t, err)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(c))

	long := "/virtkit/VirtualMachineInstance/default/" + strings.Repeat("x", 400)
	src.set(
		store.CorruptError{Kind: "VirtualMachineInstance", Key: store.Key{Namespace: "default", Name: "zzpoison"},
			StorageKey: "/virtkit/VirtualMachineInstance/default/zzpoison", Reason: store.CorruptJSON, Err: errors.New("bad")},
		store.CorruptError{Kind: "VirtualMachineInstance", StorageKey: "/virtkit/VirtualMachineInstance/bad\xffkey", Reason: store.CorruptKey},
		store.CorruptError{Kind: "VirtualMachineInstance", StorageKey: long, Reason: store.CorruptSize},
		store.CorruptError{Kind: "VirtualMachineInstance", StorageKey: long + "y", Reason: store.CorruptSize},
	)
	const header = `# HELP virtkit_store_undecodable_objects Stored objects the store skips because they are not valid objects for their key (1 per key; repair by rewriting or deleting the key).
# TYPE virtkit_store_undecodable_objects gauge
`
	cut := long[:maxKeyLabel] + "..."
	want := header + `virtkit_store_undecodable_objects{key="/virtkit/VirtualMachineInstance/bad` + "\uFFFD" + `key",kind="VirtualMachineInstance",reason="key"} 1
virtkit_store_undecodable_objects{key="` + cut + `",kind="VirtualMachineInstance",reason="size"} 1
virtkit_store_undecodable_objects{key="/virtkit/VirtualMachineInstance/default/zzpoison",kind="VirtualMachineInstance",reason="json"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "virtkit_store_undecodable_objects"))
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
	promcheck.RequireClean(t, gatherText(t, reg))

	// A repaired key's series goes away.
	src.set()
	assert.Equal(t, 0, testutil.CollectAndCount(c, "virtkit_store_undecodable_objects"))
}

func TestStoreCollectorNilSource(t *testing.T) {
	_, err := NewStoreCollector(nil, Options{})
	require.ErrorIs(t, err, virtkit.ErrInvalidOptions)
}
