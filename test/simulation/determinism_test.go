package simulation

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
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

var (
	flagRepeat      = flag.Bool("repeat", false, "TestSeedsRepeat: a wide sweep, the seeds of -repeat-seeds with -repeat-ops operations, instead of the short fixed set")
	flagRepeatSeeds = flag.String("repeat-seeds", "3,8,17,29,30,37,31567,40001", "TestSeedsRepeat with -repeat: the seeds, comma-separated")
	flagRepeatOps   = flag.Int("repeat-ops", 80, "TestSeedsRepeat with -repeat: operations per seed")
	flagRepeatWall  = flag.Duration("repeat-timeout", 0, "TestSeedsRepeat: wall time one run may take (0: the simulation's default); a longer one for sweeps on a loaded machine")
)

// The short fixed set TestSeedsRepeat runs without -repeat, few enough
// operations for CI under the race detector: seed 31567 (a node agent's
// restart at step 37 raced its guest-agent pool) and seed 8 (an agent
// crash and the final healing). Seeds 30 and 55 (injected conflicts and
// store latency) are left to -repeat: their runs parted rarely (seed 55
// about once in 24 runs; seed 30 under the race detector on a heavily
// loaded machine), as a reconciler's own write's event raced the write's
// return (fixed; TestOwnWritesEventBeforeTheWriteReturned guards it
// without depending on luck), and a seed that parts that seldom would
// neither catch a regression nor, should a cause be left, keep CI's result
// independent of its load.
const (
	ciRepeatSeeds = "31567,8"
	ciRepeatOps   = 40
)

// TestSeedsRepeat runs generated seeds, every operation and fault on,
// twice: the per-instant traces (every object, events included) must be
// byte for byte the same, and so must the violations found. A difference
// means something outside the seed and the virtual clock decided an
// outcome (a wall-clock timer or timestamp, map order, an unseeded random
// choice, goroutines racing inside one instant). Causes it found, fixed
// since: a VM re-applied without a firmware serial drew a random one (the
// fault store hashes objects to decide its conflicts, so a run took
// another path: seed 31567); node agents' and reconcilers' timeouts ran
// on the wall clock; a soft reboot's request token was the wall clock's
// time; two components acting on one object at one virtual instant ran
// concurrently, so which went first (the garbage collector or the VM
// controller deleting a VMI, two writers of one status, one of which then
// conflicted) was the Go scheduler's choice: the components' writes now
// take turns in a canonical order (writeTurns); the VMI controller
// re-queued the VMIs waiting for a node in a map's order (now sorted); an
// agent crash cut its store link before cancelling it, so a dying worker
// went on to undefine a domain or not (seed 8); the final healing cleared
// the store latency after thawing the nodes, and did not settle between
// heals (seed 8); timers set for one instant by concurrent goroutines
// fired in the order they were set (seed 37: the virtual clock now breaks
// such ties by the call path that set each timer, timerSite); a restarted
// node agent's first reconciles read the guest agents before or after its
// guest-agent pool had started and polled them (seed 31567: Prime now
// waits for both); the agent's status resyncs and the pool's polls
// drew their jitter from one stream per node in the order concurrent
// workers got to it (now a value of the object and the instant,
// seeded.Keyed); a migration's progress writer, back from a write slower
// than its interval, found both its stop signal and a buffered tick ready
// and the select picked one at random, so one run wrote a last progress
// write before the outcome and the next did not (seeds 50 and 51: the
// stop now wins, TestMigrationProgressStopsAtTheEnd); the VM and VMI
// controllers' watches judged the event of their own write (skipped once)
// against the versions remembered when a write returned, and the event
// could come first, so it woke the reconciler once more and a failing
// write was retried at once in one run and after the key's backoff in the
// next (seed 55; the same shape as seed 30's partings under the race
// detector: TestOwnWritesEventBeforeTheWriteReturned in package
// controller).
// By default it runs the short fixed set (ciRepeatSeeds, ciRepeatOps);
// -repeat runs the seeds of -repeat-seeds with -repeat-ops operations
// instead (a wide sweep). With -trace FILE, the traces of a seed whose
// runs differ are written to FILE.SEED.1 and .2.
func TestSeedsRepeat(t *testing.T) {
	if testing.Short() && !*flagRepeat {
		t.Skip("simulation: not in -short")
	}
	seeds, nOps := ciRepeatSeeds, ciRepeatOps
	if *flagRepeat {
		seeds, nOps = *flagRepeatSeeds, *flagRepeatOps
	}
	for _, f := range split(seeds) {
		seed, err := strconv.ParseInt(f, 10, 64)
		require.NoError(t, err, "-repeat-seeds")
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := Config{Seed: seed, Ops: nOps, Disabled: map[string]string{}, Timeout: *flagRepeatWall}
			ops := Generate(cfg)
			var traces [2]string
			var found [2]string
			for i := range traces {
				c := cfg
				c.Trace = func(tr string) { traces[i] = tr }
				out, err := Run(t.Context(), c, ops)
				require.NoError(t, err)
				found[i] = fmt.Sprint(out.Violations)
				// A run cut short by its wall-time bound (a heavily loaded
				// machine) leaves a shorter trace: say so rather than
				// report where the traces part.
				for _, v := range out.Violations {
					if v.Invariant == InvStuck {
						t.Fatalf("seed %d: run %d did not finish (its trace is cut short, so the runs cannot be compared): %s", seed, i+1, v.Message)
					}
				}
			}
			require.NotEmpty(t, traces[0])
			if traces[0] != traces[1] {
				if *flagTrace != "" {
					for i, tr := range traces {
						_ = os.WriteFile(fmt.Sprintf("%s.%d.%d", *flagTrace, seed, i+1), []byte(tr), 0o644)
					}
				}
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

// A migration's progress writer stops once the engine has ended, even
// with a tick waiting: with writes slower than the progress interval (a
// store latency of 3 s against 1 s) a tick is always buffered when the
// engine ends during a progress write, and a select with both ready
// picked one at random, so one run wrote a last progress write (the
// engine's final strategy without endTimestamp) before the outcome and
// the next did not (seeds 50 and 51 parted this way). Three migrations:
// without the fix each one has an even chance of the extra write.
func TestMigrationProgressStopsAtTheEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation: not in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, HarnessOptions{Seed: 5})
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Close()) }()
	uctx := asUser(ctx)
	require.NoError(t, h.setMigrationBandwidth(16<<20))
	require.NoError(t, h.Cluster.Apply(uctx, newVMI("mig")))
	require.NoError(t, h.Advance(ctx, 30*time.Second))
	h.faults.setLatency(3 * time.Second)
	key := store.Key{Namespace: Namespace, Name: "mig"}
	for range 3 {
		_, err := actions.Migrate(uctx, h.Store, key, actions.MigrateOptions{})
		require.NoError(t, err)
		require.NoError(t, h.Advance(ctx, 2*time.Minute))
	}
	changes, errs := h.Recorder.Changes()
	require.Empty(t, errs)
	ended := map[string]bool{}
	for _, c := range changes {
		vmi, ok := c.Object.(*virtkit.VirtualMachineInstance)
		if !ok || vmi.Name != "mig" || vmi.Status.MigrationState == nil || vmi.Status.MigrationState.Engine == nil {
			continue
		}
		ms := vmi.Status.MigrationState
		if !strings.HasSuffix(ms.Engine.Strategy, "Completed") {
			continue
		}
		ended[string(ms.MigrationUID)] = true
		assert.NotNil(t, ms.EndTimestamp, "migration %s: the engine's final status (%s) was written without its end at %s: a progress write after the engine ended",
			ms.MigrationUID, ms.Engine.Strategy, c.At.Format(time.RFC3339Nano))
	}
	assert.Len(t, ended, 3, "migrations whose engine ended")
}
