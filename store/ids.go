package store

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/internal/seeded"
)

// IDs draws what a store makes up when it creates an object: its uid and,
// for metadata.generateName, its name. obj is the object being created
// (before its name and uid are set), for implementations that derive them
// from its content. Implementations are safe for concurrent use.
type IDs interface {
	// UID returns the uid of a new object of kind at key.
	UID(kind string, key Key, obj virtkit.Object) types.UID
	// Name returns a name for a new object of kind in namespace with
	// metadata.generateName base: base plus a suffix.
	Name(kind, namespace, base string, obj virtkit.Object) string
}

// RandomIDs returns random uids (UUIDv4) and random generateName suffixes,
// as Kubernetes draws them. It is the stores' default.
func RandomIDs() IDs { return randomIDs{} }

type randomIDs struct{}

func (randomIDs) UID(string, Key, virtkit.Object) types.UID { return uuid.NewUUID() }

func (randomIDs) Name(_, _, base string, _ virtkit.Object) string {
	return GenerateNameWith(base, rand.IntN)
}

// SeededIDs returns uids and generated names that depend only on seed and
// on what is created: the n-th object with the same content created at one
// key gets the same uid in every run with that seed, and the n-th object
// with the same content named from one base in one namespace the same
// suffix, whatever other objects were created in between or in which
// order concurrent writers reached the store (two components recording
// events about one object at one instant, say). A
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

// content is obj as JSON without resourceVersions (its references to
// other objects carry theirs, which depend on the order of all writes):
// what the object says, for telling apart objects created under one key
// or base.
func content(obj virtkit.Object) string {
	js, err := json.Marshal(obj)
	if err != nil {
		return ""
	}
	var v any
	if err := json.Unmarshal(js, &v); err != nil {
		return ""
	}
	dropResourceVersions(v)
	js, err = json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(js)
}

func dropResourceVersions(v any) {
	switch t := v.(type) {
	case map[string]any:
		delete(t, "resourceVersion")
		for _, e := range t {
			dropResourceVersions(e)
		}
	case []any:
		for _, e := range t {
			dropResourceVersions(e)
		}
	}
}

func (s *seededIDs) UID(kind string, key Key, obj virtkit.Object) types.UID {
	h := seeded.Key(s.seed, kind, key.Namespace, key.Name, content(obj))
	id := string(h[:])
	k := seeded.Key(s.seed, "uid", id, s.next(s.uids, id))
	var b [16]byte
	copy(b[:], k[:16])
	return types.UID(seeded.FormatUUID(b))
}

func (s *seededIDs) Name(kind, namespace, base string, obj virtkit.Object) string {
	h := seeded.Key(s.seed, kind, namespace, base, content(obj))
	id := string(h[:])
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
