package simulation

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Shrunk seeds of the node-agent faults (crash-agent, partition, freeze),
// replayed with every operation enabled: each broke an invariant before
// the fix named in its comment.
func TestReproAgentFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the cluster once per reproduction")
	}
	for _, tc := range []struct {
		file string
		why  string
	}{
		{
			// The source agent died after the switchover, before it
			// recorded the outcome; restarted, it failed the migration
			// ("the source node agent restarted") and the VMI ("domain
			// disappeared") while the guest ran on the target, which kept
			// it: ground-truth and leaked-domain. The restarted source now
			// records the end of a migration whose guest left, and the
			// target takes the VMI over.
			file: "source-agent-died-after-switchover.json",
			why:  "a restarted source agent whose guest left records the migration's end",
		},
		{
			// The source, partitioned from the store, could not resume the
			// guest the migration monitor had paused once the migration
			// failed; the node-health controller then failed the VMI but
			// left its Paused (PausedByMigrationMonitor) condition:
			// paused-by-ended-migration. A VMI failed for an unresponsive
			// node now drops the conditions about its guest.
			file: "unresponsive-source-paused-by-migration.json",
			why:  "a VMI failed for an unresponsive node is not left paused by the migration monitor",
		},
		{
			// The target's link to the store went down as it took the VMI
			// over: the Migrated event was lost (recorded after the label
			// update, and never retried): lifecycle-event. The target now
			// records it with the status that completes the migration, and
			// the recorder retries a failed write.
			file: "migrated-event-during-partition.json",
			why:  "the Migrated event survives a partition of the target",
		},
		{
			// As above, with the store slowed down.
			file: "migrated-event-before-labels.json",
			why:  "the Migrated event does not wait for the label update",
		},
		{
			// The agent crashed while its Started event was being written
			// (a slow store); the restarted agent adopted the running guest
			// without one: lifecycle-event. The agent now records Started
			// with the status write of the Running phase (the restarted
			// agent's), and the recorder retries a failed write.
			file: "started-event-agent-crash.json",
			why:  "a Started event cut short by an agent crash is retried",
		},
		{
			// A migration admitted while the VMI was being deleted kept
			// the old incarnation's node as its source; the VM created the
			// VMI again on another node and the migration was handed off
			// to it with the stale source, so neither node acted and it
			// stayed in TargetReady for good. It now fails once the VMI is
			// no longer on its source.
			file: "migration-of-replaced-vmi.json",
			why:  "a migration whose VMI left its source node fails",
		},
		{
			// The source node was partitioned from the store just as it
			// recorded Migrating and stayed so for longer than its
			// recorder's retries; the recorder gave the event up, as
			// client-go's recorder does in KubeVirt. The tester now knows
			// a recorder that gave up may have lost its reporter's events.
			file: "migrating-event-given-up-in-partition.json",
			why:  "an event given up after the recorder's retries is not a missing transition",
		},
		{
			// A ReplicaSet deleted in the foreground and, before the
			// garbage collector's deletes of its VMIs landed (a slow
			// store), deleted again with policy Orphan: the VMIs the
			// first delete had already claimed went, as in Kubernetes.
			// The tester now knows an orphaning delete cannot call back a
			// foreground delete under way.
			file: "orphan-after-foreground-delete.json",
			why:  "an orphaning delete after a foreground delete keeps only what the first had not claimed",
		},
		{
			// The mirror image: a VM deleted with policy Orphan and, while
			// the garbage collector's orphaning writes were still landing
			// (a slow store), deleted again in the background. The second
			// delete replaced the "orphan" finalizer, as Kubernetes' does,
			// but the collector finished orphaning the VMI it had already
			// read, as Kubernetes' would. The tester now accepts either
			// end for an owner deleted once with Orphan.
			file: "orphan-then-background-delete.json",
			why:  "a background delete after an orphaning one may find the VMIs already orphaned",
		},
		{
			// A volume hot-plugged into a running VMI and removed again
			// while the store was slow: the agent attached the disk, but
			// its status write recording it was still under way when the
			// spec dropped the volume, and failed (a conflict; a partition
			// or an agent crash loses it the same way). The agent compared
			// the domain's disks with the spec only while the spec or the
			// status named a hot-plugged volume, so the disk stayed for
			// good: hotplug-volumes. It now keeps the domain's disks with
			// its cached facts and detaches any the spec lacks, recorded
			// or not.
			file: "hot-unplug-lost-volume-status.json",
			why:  "a hot-plugged disk whose status write was lost is detached once its volume leaves the spec",
		},
		{
			// Found by the long run (seed 39343, once in about 70 runs):
			// a user deleted the VMI of an Always VM that no node could
			// take; the VM controller's finalizer went last, so its own
			// write removed the VMI, and it took the Deleted event for the
			// echo of that write: the VM stayed without a VMI
			// (run-strategy). Which finalizer goes last is up to the
			// scheduler here; controller.TestVMCreatesTheNextVMIAfterItsOwnWriteRemovedTheLast
			// pins the order. A write that removes an object is no
			// longer remembered as the reconciler's own.
			file: "vm-removed-last-vmi-finalizer.json",
			why:  "a VM whose VMI it released last creates the next one",
		},
		{
			// Found by the long run (seed 45393, about once in eight runs
			// under load): with injected conflicts and a slow store, a
			// migration's hand-off wrote the VMI's migrationState (target
			// node-2) but lost its label and its own status write; placed
			// again once node-2 was cordoned, it labelled the VMI for
			// node-3 and kept node-2 in the state, so neither agent acted
			// and it stayed in PreparingTarget (migration-terminal). A
			// hand-off now rewrites a state no agent was told of, and keeps
			// a target that was. controller.TestMigrationHandOffAfterALostWrite
			// pins both orders.
			file: "migration-handoff-lost-label.json",
			why:  "a migration placed again after a lost hand-off names one target",
		},
		{
			// Found by the long run (seed 50339, shrunk from 80 operations
			// to 23 once the write turns made it repeat): a 3 GiB guest
			// switched to post-copy on a 4 MiB/s link, which takes 13
			// minutes, longer than the quiescence; the checker took the
			// running migration for a stuck one (migration-terminal) and
			// its two active domains for a guest on two hosts
			// (ground-truth). Post-copy has no timeout and cannot be
			// aborted: the final checks now wait for it (bounded).
			file: "postcopy-outlasts-quiescence.json",
			why:  "a post-copy migration slower than the quiescence is waited for, not reported",
		},
		{
			// The agent of the VMI's node crashed and the host's watchdog
			// stopped the guest; a volume migration asked for meanwhile
			// failed when the restarted agent reported the guest gone. As
			// KubeVirt, the VM is then marked ManualRecoveryRequired and
			// starts no VMI; the run-strategy check expected one.
			file: "vmi-ended-during-volume-migration.json",
			why:  "a VM that needs manual recovery after an interrupted volume migration starts no VMI",
		},
		{
			// A VM deleted in the background, then with Orphan 2 ms
			// later (the store slow): the VM controller had already
			// stopped the VMI for the first delete, and the checker
			// reported it as deleted against the orphaning one. Like
			// Kubernetes' second delete, the orphaning one cannot undo
			// the first; the checker now allows it.
			file: "background-then-orphan-delete.json",
			why:  "an orphaning delete after a background one may find the VMI already deleted",
		},
	} {
		t.Run(tc.file, func(t *testing.T) {
			r, err := ReadRepro(filepath.Join("testdata", "repro", tc.file))
			require.NoError(t, err)
			out, err := Run(context.Background(), Config{Seed: r.Seed, Disabled: map[string]string{}}, r.Ops)
			require.NoError(t, err)
			assert.Empty(t, out.Violations, "%s: %s", tc.file, tc.why)
		})
	}
}
