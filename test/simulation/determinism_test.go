package simulation

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

// scaleAndMigrate applies a ReplicaSet (VMIs named from generateName),
// scales it up and down, migrates one of its VMIs, and returns the full
// change trace and the final object list.
func scaleAndMigrate(t *testing.T, seed int64) (trace, objects string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, HarnessOptions{Seed: seed})
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Close()) }()
	uctx := asUser(ctx)
	step := func(d time.Duration) { require.NoError(t, h.Advance(ctx, d)) }

	require.NoError(t, h.Cluster.Apply(uctx, newReplicaSet("rs", 3)))
	step(30 * time.Second)
	require.NoError(t, h.Cluster.Apply(uctx, newReplicaSet("rs", 5)))
	step(30 * time.Second)
	require.NoError(t, h.Cluster.Apply(uctx, newReplicaSet("rs", 2)))
	step(30 * time.Second)

	var vmis virtkit.VirtualMachineInstanceList
	require.NoError(t, h.Store.List(uctx, &vmis, store.ListOptions{Namespace: Namespace}))
	require.Len(t, vmis.Items, 2)
	names := []string{vmis.Items[0].Name, vmis.Items[1].Name}
	sort.Strings(names)
	_, err = actions.Migrate(uctx, h.Store, store.Key{Namespace: Namespace, Name: names[0]}, actions.MigrateOptions{})
	require.NoError(t, err)
	step(2 * time.Minute)

	trace, err = h.Recorder.Trace()
	require.NoError(t, err)
	objects, err = Snapshot(uctx, h.Store)
	require.NoError(t, err)
	return trace, objects
}

// The same seed on virtual time gives the same run byte for byte: which
// VMIs the ReplicaSet removes on scale-down, their names and uids, every
// event and status write. Another seed names things differently.
func TestSameSeedSameTrace(t *testing.T) {
	if raceEnabled {
		// The detector's scheduling exposes a race inside one instant
		// that plain runs do not hit: whether the source agent's status
		// write at a migration's first poll includes the engine's first
		// decision.
		t.Skip("in-instant race of the migration engine under the race detector")
	}
	trace1, objects1 := scaleAndMigrate(t, 42)
	trace2, objects2 := scaleAndMigrate(t, 42)
	require.NotEmpty(t, trace1)
	assert.Contains(t, objects1, "VirtualMachineInstanceMigration")
	if !assert.Equal(t, objects1, objects2, "object lists of two runs with seed 42") ||
		!assert.Equal(t, trace1, trace2, "change traces of two runs with seed 42") {
		return
	}
	trace3, objects3 := scaleAndMigrate(t, 43)
	assert.NotEqual(t, objects1, objects3, "seeds 42 and 43 gave the same objects")
	assert.NotEqual(t, trace1, trace3, "seeds 42 and 43 gave the same trace")
}

var flagRepeat = flag.Bool("repeat", false, "TestSeedsRepeat: run five generated seeds twice and require byte-identical traces")

// TestSeedsRepeat runs a handful of generated seeds, every operation and
// fault on, twice: the per-instant traces (every object, events included)
// must be byte for byte the same, and so must the violations found. A
// difference means something outside the seed and the virtual clock
// decided an outcome (a wall-clock timer, map order, an unseeded random
// choice). It found two such causes, fixed since: a VM re-applied without
// a firmware serial drew a random one (the fault store hashes objects to
// decide its conflicts, so a run took another path: seed 31567), and node
// agents' and reconcilers' timeouts ran on the wall clock. It still finds
// one, in seeds 3, 17 and 31567: two components that act on one object at
// one virtual instant run concurrently, so which acts first differs
// between runs. When a VM is deleted, the garbage collector and the VM
// controller both delete its VMI; the VM controller records
// SuccessfulDelete only when it gets there first. Two writers of one VMI
// at one instant conflict in some runs and not others, and the loser's
// retry lands a few virtual milliseconds later. Each run is a valid
// history; making them one would take running the components of an
// instant one at a time in a fixed order. Until then it runs only with
// -repeat.
func TestSeedsRepeat(t *testing.T) {
	if !*flagRepeat {
		t.Skip("run with -args -repeat: two components acting on one object at one instant still take turns differently between runs of some seeds")
	}
	if raceEnabled {
		t.Skip("in-instant race of the migration engine under the race detector (see TestSameSeedSameTrace)")
	}
	for _, seed := range []int64{3, 17, 29, 31567, 40001} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := Config{Seed: seed, Ops: 40, Disabled: map[string]string{}}
			ops := Generate(cfg)
			var traces [2]string
			var found [2]string
			for i := range traces {
				c := cfg
				c.Trace = func(tr string) { traces[i] = tr }
				out, err := Run(t.Context(), c, ops)
				require.NoError(t, err)
				found[i] = fmt.Sprint(out.Violations)
			}
			require.NotEmpty(t, traces[0])
			if traces[0] != traces[1] {
				a, b := strings.Split(traces[0], "\n"), strings.Split(traces[1], "\n")
				for i := 0; i < min(len(a), len(b)); i++ {
					if a[i] != b[i] {
						t.Fatalf("seed %d: the traces of two runs part at line %d:\n first: %.600s\nsecond: %.600s", seed, i+1, a[i], b[i])
					}
				}
				t.Fatalf("seed %d: the traces of two runs differ in length: %d and %d lines", seed, len(a), len(b))
			}
			assert.Equal(t, found[0], found[1], "violations of two runs of seed %d", seed)
		})
	}
}
