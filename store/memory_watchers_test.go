package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

func TestEqualityLabel(t *testing.T) {
	for _, tc := range []struct {
		sel        string
		key, value string
		indexed    bool
	}{
		{sel: "node=a", key: "node", value: "a", indexed: true},
		{sel: "node==a", key: "node", value: "a", indexed: true},
		{sel: "node in (a)", key: "node", value: "a", indexed: true},
		{sel: "node in (a,b)"},
		{sel: "node!=a"},
		{sel: "node"},
		{sel: "node=a,app=web"},
		{sel: ""},
	} {
		t.Run(tc.sel, func(t *testing.T) {
			sel, err := labels.Parse(tc.sel)
			require.NoError(t, err)
			key, value, ok := equalityLabel(sel)
			assert.Equal(t, tc.indexed, ok)
			assert.Equal(t, tc.key, key)
			assert.Equal(t, tc.value, value)
		})
	}
	_, _, ok := equalityLabel(nil)
	assert.False(t, ok)
}

func TestWatcherSetRemoveCleansIndex(t *testing.T) {
	s := newWatcherSet()
	a := &memWatcher{selector: labels.SelectorFromSet(labels.Set{"node": "a"})}
	b := &memWatcher{selector: labels.SelectorFromSet(labels.Set{"node": "a"})}
	all := &memWatcher{}
	for _, w := range []*memWatcher{a, b, all} {
		s.add(w)
	}
	assert.Len(t, s.byLabel["node"]["a"], 2)
	s.remove(a)
	s.remove(a) // twice is harmless
	s.remove(b)
	s.remove(all)
	assert.Empty(t, s.all)
	assert.Empty(t, s.byLabel)
	assert.Empty(t, s.unindexed)
}
