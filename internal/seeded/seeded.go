package seeded

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"time"
)

// Source is one seeded random stream, safe for concurrent use.
type Source struct {
	mu sync.Mutex
	r  *rand.Rand
}

// New returns the stream called name of seed: the same seed and name give
// the same values, different names independent ones.
func New(seed int64, name string) *Source {
	k := Key(seed, name)
	return &Source{r: rand.New(rand.NewPCG(binary.LittleEndian.Uint64(k[:8]), binary.LittleEndian.Uint64(k[8:16])))}
}

// IntN returns a uniform integer in [0, n); n must be positive.
func (s *Source) IntN(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.IntN(n)
}

// Float64 returns a uniform float in [0, 1).
func (s *Source) Float64() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Float64()
}

// Uint64 returns a uniform 64-bit value.
func (s *Source) Uint64() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.r.Uint64()
}

// UUID returns a version-4-shaped UUID drawn from the stream.
func (s *Source) UUID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], s.Uint64())
	binary.LittleEndian.PutUint64(b[8:], s.Uint64())
	return FormatUUID(b)
}

// Key hashes seed and the parts into 32 bytes: a value that depends on
// nothing but its inputs (no draw order).
func Key(seed int64, parts ...string) [32]byte {
	h := sha256.New()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(seed))
	h.Write(b[:])
	for _, p := range parts {
		binary.LittleEndian.PutUint64(b[:], uint64(len(p)))
		h.Write(b[:])
		h.Write([]byte(p))
	}
	var k [32]byte
	copy(k[:], h.Sum(nil))
	return k
}

// Keyed returns a function that draws a uniform float in [0, 1) for a
// key at a time, from seed and name: a pure function of its inputs, so
// that workers drawing concurrently get the same values whatever order
// they draw in and however often. Two draws for one key at one instant are
// equal.
func Keyed(seed int64, name string) func(key string, at time.Time) float64 {
	return func(key string, at time.Time) float64 {
		k := Key(seed, name, key, at.UTC().Format(time.RFC3339Nano))
		return float64(binary.LittleEndian.Uint64(k[:8])>>11) / (1 << 53)
	}
}

// FormatUUID formats 16 bytes as a canonical version 4 (random) UUID,
// setting the version and variant bits.
func FormatUUID(b [16]byte) string {
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	const hexd = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hexd[c>>4], hexd[c&0x0f])
	}
	return string(out)
}
