package seeded

import (
	"testing"

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
