package cluster

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/internal/seeded"
	"github.com/virtkit/virtkit/node"
)

// seededReconciler gives the controller called name its own random streams
// of seed (backoff jitter, firmware UUIDs and serials drawn by defaulting);
// seed 0 leaves rc as it is.
func seededReconciler(rc controller.ReconcilerOptions, seed int64, name string) controller.ReconcilerOptions {
	if seed == 0 {
		return rc
	}
	if rc.IntN == nil {
		rc.IntN = seeded.New(seed, "intn/"+name).IntN
	}
	if rc.Defaults.NewUUID == nil {
		rc.Defaults.NewUUID = seededUUIDs(seed, "uuid/"+name)
	}
	return rc
}

// seededUUIDs returns a source of UUIDs from the stream called name.
func seededUUIDs(seed int64, name string) func() types.UID {
	src := seeded.New(seed, name)
	return func() types.UID { return types.UID(src.UUID()) }
}

// seedNode gives one node agent jitter of seed, keyed by VMI and instant
// because the agent's workers draw concurrently; seed 0, or jitter the
// caller chose, leaves it as it is.
func seedNode(seed int64, name string, no *node.Options) {
	if seed != 0 && no.Float64 == nil && no.KeyedFloat64 == nil {
		no.KeyedFloat64 = seeded.Keyed(seed, "node/"+name)
	}
}

// seedGuestAgent gives one node's guest-agent pool jitter of seed, keyed
// by poll and instant because the pool's workers draw concurrently; seed
// 0, or jitter the caller chose, leaves it as it is.
func seedGuestAgent(seed int64, name string, gao *node.GuestAgentSourceOptions) {
	if seed != 0 && gao.Float64 == nil && gao.KeyedFloat64 == nil {
		gao.KeyedFloat64 = seeded.Keyed(seed, "guestagent/"+name)
	}
}
