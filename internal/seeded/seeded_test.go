package seeded

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestStreamsRepeatPerSeedAndName(t *testing.T) {
	draw := func(seed int64, name string) []uint64 {
		s := New(seed, name)
		return []uint64{s.Uint64(), uint64(s.IntN(1000)), s.Uint64()}
	}
	assert.Equal(t, draw(7, "a"), draw(7, "a"))
	assert.NotEqual(t, draw(7, "a"), draw(8, "a"))
	assert.NotEqual(t, draw(7, "a"), draw(7, "b"))
}

func TestUUIDShape(t *testing.T) {
	u := New(1, "x").UUID()
	assert.Len(t, u, 36)
	assert.Equal(t, byte('4'), u[14])
	assert.Contains(t, "89ab", string(u[19]))
}

func TestKeyedDependsOnlyOnItsInputs(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	a, b := Keyed(7, "node/n1"), Keyed(7, "node/n1")
	u := a("ns/vm", at)
	assert.GreaterOrEqual(t, u, 0.0)
	assert.Less(t, u, 1.0)
	_ = a("ns/other", at) // another key's draw changes nothing
	assert.Equal(t, u, b("ns/vm", at))
	assert.Equal(t, u, a("ns/vm", at))
	assert.NotEqual(t, u, a("ns/vm", at.Add(time.Millisecond)))
	assert.NotEqual(t, u, a("ns/vm2", at))
	assert.NotEqual(t, u, Keyed(8, "node/n1")("ns/vm", at))
	assert.NotEqual(t, u, Keyed(7, "node/n2")("ns/vm", at))
}
