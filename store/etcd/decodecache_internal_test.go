package etcd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
)

func TestDecodeCacheEvictsOldest(t *testing.T) {
	c := newDecodeCache(2)
	obj := func(name string) decoded {
		return decoded{obj: &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
	}
	a, b, d := decodeKey{key: "a", mod: 1, rev: 1}, decodeKey{key: "b", mod: 2, rev: 2}, decodeKey{key: "d", mod: 3, rev: 3}
	c.put(a, obj("a"))
	c.put(b, obj("b"))
	c.put(a, obj("again")) // present: kept as it was
	got, ok := c.get(a)
	assert.True(t, ok)
	assert.Equal(t, "a", got.obj.GetName())
	c.put(d, obj("d")) // evicts a, the oldest
	_, ok = c.get(a)
	assert.False(t, ok)
	for _, k := range []decodeKey{b, d} {
		_, ok := c.get(k)
		assert.True(t, ok, k.key)
	}
	assert.Len(t, c.byKey, 2)
}
