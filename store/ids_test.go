package store_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// createNamed creates events from generateName "vm." with the given notes
// in that order and returns the name and uid each note got.
func createNamed(t *testing.T, ids store.IDs, notes ...string) map[string][2]string {
	t.Helper()
	m, err := store.NewMemoryWithOptions(store.Options{IDs: ids})
	require.NoError(t, err)
	out := map[string][2]string{}
	for _, n := range notes {
		ev := &virtkit.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "vm."}, Note: n}
		require.NoError(t, m.Create(context.Background(), ev))
		out[n] = [2]string{ev.Name, string(ev.UID)}
	}
	return out
}

// With SeededIDs the names and uids an object gets depend on the seed and
// on the object, not on which concurrent writer reached the store first.
func TestSeededIDsIgnoreArrivalOrder(t *testing.T) {
	a := createNamed(t, store.SeededIDs(1), "scheduled", "started", "started")
	b := createNamed(t, store.SeededIDs(1), "started", "scheduled")
	assert.Equal(t, a["scheduled"], b["scheduled"])
	assert.NotEqual(t, a["scheduled"][0], a["started"][0])
	c := createNamed(t, store.SeededIDs(2), "scheduled")
	assert.NotEqual(t, a["scheduled"], c["scheduled"])
	r1 := createNamed(t, store.RandomIDs(), "scheduled")
	r2 := createNamed(t, store.RandomIDs(), "scheduled")
	assert.NotEqual(t, r1["scheduled"][1], r2["scheduled"][1])
	for _, v := range a {
		assert.Regexp(t, `^vm\.[bcdfghjklmnpqrstvwxz2456789]{5}$`, v[0])
		assert.True(t, virtkit.IsValidUUID(v[1]), v[1])
	}
}
