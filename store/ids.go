package store

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/virtkit/virtkit/internal/seeded"
)

// IDs draws what a store makes up when it creates an object: its uid and,
// for metadata.generateName, its name. Implementations are safe for
// concurrent use.
type IDs interface {
	// UID returns the uid of a new object of kind at key.
	UID(kind string, key Key) types.UID
	// Name returns a name for a new object of kind in namespace with
	// metadata.generateName base: base plus a suffix.
	Name(kind, namespace, base string) string
}

// RandomIDs returns random uids (UUIDv4) and random generateName suffixes,
// as Kubernetes draws them. It is the stores' default.
func RandomIDs() IDs { return randomIDs{} }

type randomIDs struct{}

func (randomIDs) UID(string, Key) types.UID { return uuid.NewUUID() }

func (randomIDs) Name(_, _, base string) string {
	return GenerateNameWith(base, rand.IntN)
}

// SeededIDs returns uids and generated names that depend only on seed and
// on what is created: the n-th object created at one key gets the same uid
// in every run with that seed, and the n-th name generated from one base
// in one namespace the same suffix, whatever other objects were created in
// between or in which order concurrent writers reached the store. A
// seeded cluster (cluster.Options.Seed) uses them so that a scenario on
// virtual time names and identifies its objects the same way every time.
// The counters grow with every key and base seen: meant for tests and
// simulations, not long-lived stores.
func SeededIDs(seed int64) IDs {
	return &seededIDs{seed: seed, uids: map[string]int{}, names: map[string]int{}}
}

type seededIDs struct {
	seed  int64
	mu    sync.Mutex
	uids  map[string]int
	names map[string]int
}

func (s *seededIDs) next(m map[string]int, id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := m[id]
	m[id] = n + 1
	return strconv.Itoa(n)
}

func (s *seededIDs) UID(kind string, key Key) types.UID {
	id := kind + "\x00" + key.Namespace + "\x00" + key.Name
	k := seeded.Key(s.seed, "uid", id, s.next(s.uids, id))
	var b [16]byte
	copy(b[:], k[:16])
	return types.UID(seeded.FormatUUID(b))
}

func (s *seededIDs) Name(kind, namespace, base string) string {
	id := kind + "\x00" + namespace + "\x00" + base
	k := seeded.Key(s.seed, "name", id, s.next(s.names, id))
	i := 0
	return GenerateNameWith(base, func(n int) int {
		v := int(k[i]) % n
		i++
		return v
	})
}

// GenerateName returns base plus five random lowercase alphanumerics, as
// Kubernetes does for metadata.generateName.
func GenerateName(base string) string { return GenerateNameWith(base, rand.IntN) }

// GenerateNameWith is GenerateName drawing the suffix's characters from
// intn (a uniform integer in [0, n)).
func GenerateNameWith(base string, intn func(n int) int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	var b strings.Builder
	b.WriteString(base)
	for range 5 {
		b.WriteByte(alphabet[intn(len(alphabet))])
	}
	return b.String()
}
