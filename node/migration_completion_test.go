package node_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// TestMigrationCompletionExtension drives the cluster's
// virtkitMaxCompletionTimeoutPerGiB through the node agent: a 64 MiB guest
// counts as 1 GB, so completionTimeoutPerGiB 1 gives it 1 s, and the
// upper bound 30 s per GiB lets a migration that converges run until 30 s.
func TestMigrationCompletionExtension(t *testing.T) {
	for name, tc := range map[string]struct {
		timeoutPerGiB int64
		// policyTimeout, when set, is a MigrationPolicy's explicit
		// completionTimeoutPerGiB for the guest.
		policyTimeout *int64
		link          sim.Link
		workload      sim.Workload
		check         func(t *testing.T, done *virtkit.VirtualMachineInstanceMigration, ms *virtkit.VirtualMachineInstanceMigrationState)
	}{
		"converging but slow: runs past the per-GiB timeout and succeeds": {
			// 64 MiB at 16 MiB/s: about 4 s, four times the timeout.
			timeoutPerGiB: 1, link: sim.Link{Bandwidth: 16 << 20},
			workload: sim.Workload{DirtyRate: 1 << 20, WorkingSet: 4 << 20, ThrottleSensitivity: 1},
			check: func(t *testing.T, done *virtkit.VirtualMachineInstanceMigration, ms *virtkit.VirtualMachineInstanceMigrationState) {
				require.Equal(t, virtkit.MigrationSucceeded, done.Status.Phase, "%+v", ms)
				assert.Greater(t, ms.EndTimestamp.Sub(ms.StartTimestamp.Time), time.Second, "ran past the 1 s timeout")
				require.NotNil(t, ms.MigrationConfiguration.VirtkitMaxCompletionTimeoutPerGiB)
				assert.Equal(t, int64(30), *ms.MigrationConfiguration.VirtkitMaxCompletionTimeoutPerGiB)
			},
		},
		"a migration policy's explicit timeout wins": {
			timeoutPerGiB: 30, policyTimeout: ptr[int64](1), link: sim.Link{Bandwidth: 16 << 20},
			workload: sim.Workload{DirtyRate: 1 << 20, WorkingSet: 4 << 20, ThrottleSensitivity: 1},
			check: func(t *testing.T, done *virtkit.VirtualMachineInstanceMigration, ms *virtkit.VirtualMachineInstanceMigrationState) {
				require.Equal(t, virtkit.MigrationFailed, done.Status.Phase, "%+v", ms)
				assert.Equal(t, "Live migration is not completed after 1 seconds and has been aborted", ms.FailureReason)
				assert.Nil(t, ms.MigrationConfiguration.VirtkitMaxCompletionTimeoutPerGiB, "the policy's timeout is final")
			},
		},
		"cannot converge: stops without an extension": {
			// 64 MiB/s of writes over all of memory that throttling
			// cannot slow, against a 16 MiB/s link, no auto-converge, no
			// post-copy: the model says pre-copy never converges, so
			// nothing is extended and the job ends by the 5 s timeout at
			// the latest.
			timeoutPerGiB: 5, link: sim.Link{Bandwidth: 16 << 20},
			workload: sim.Workload{DirtyRate: 64 << 20, ThrottleSensitivity: 0},
			check: func(t *testing.T, done *virtkit.VirtualMachineInstanceMigration, ms *virtkit.VirtualMachineInstanceMigrationState) {
				require.Equal(t, virtkit.MigrationFailed, done.Status.Phase, "%+v", ms)
				// Status times have second precision.
				assert.LessOrEqual(t, ms.EndTimestamp.Sub(ms.StartTimestamp.Time), 7*time.Second, "ended by the plain timeout: %s", ms.FailureReason)
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := &virtkit.MigrationConfiguration{
				CompletionTimeoutPerGiB:           ptr(tc.timeoutPerGiB),
				VirtkitMaxCompletionTimeoutPerGiB: ptr[int64](30),
			}
			c := startMigCluster(t, 2, tc.link, controller.MigrationOptions{Config: cfg})
			if tc.policyTimeout != nil {
				require.NoError(t, c.Apply(c.ctx, &virtkit.MigrationPolicy{
					TypeMeta:   metav1.TypeMeta{APIVersion: virtkit.MigrationsAPIVersion, Kind: virtkit.KindMigrationPolicy},
					ObjectMeta: metav1.ObjectMeta{Name: "strict"},
					Spec: virtkit.MigrationPolicySpec{
						Selectors:               &virtkit.Selectors{VirtualMachineInstanceSelector: map[string]string{"app": "slow"}},
						CompletionTimeoutPerGiB: tc.policyTimeout,
					},
				}))
			}
			vmi := c.runningVMI(t, migratableVMI("slow", "64Mi"))
			require.NoError(t, c.hosts[vmi.Status.NodeName].SetWorkload(node.DomainName("default", "slow"), tc.workload))
			mig, err := actions.Migrate(c.ctx, c.Store(), store.KeyOf(vmi), actions.MigrateOptions{})
			require.NoError(t, err)
			done := c.waitMigration(t, mig, "final", isReleased)
			ms := done.Status.MigrationState
			require.NotNil(t, ms)
			require.NotNil(t, ms.StartTimestamp)
			require.NotNil(t, ms.EndTimestamp)
			require.NotNil(t, ms.MigrationConfiguration)
			require.NotNil(t, ms.Engine)
			for _, d := range ms.Engine.Decisions {
				t.Logf("%s %s %s: %s %v", d.Time.Format(time.TimeOnly), d.Rule, d.Action, d.Reason, d.Numbers)
			}
			tc.check(t, done, ms)

			// The extension shows in the engine's decisions and in a Normal
			// event on the VMI exactly when the migration succeeded past
			// its timeout.
			extended := done.Status.Phase == virtkit.MigrationSucceeded
			var rules []string
			for _, d := range ms.Engine.Decisions {
				rules = append(rules, d.Rule)
				if d.Rule == migration.RuleCompletionExtended {
					assert.Equal(t, string(migration.ActionContinue), d.Action)
					assert.Contains(t, d.Reason, "past the completion timeout")
					assert.Contains(t, d.Numbers, "maxCompletionTimeout")
				}
			}
			if extended {
				assert.Contains(t, rules, migration.RuleCompletionExtended)
			} else {
				assert.NotContains(t, rules, migration.RuleCompletionExtended)
			}
			var events virtkit.EventList
			require.NoError(t, c.Store().List(c.ctx, &events, store.ListOptions{Namespace: vmi.Namespace}))
			var notes []string
			for _, e := range events.Items {
				if e.Reason == node.EventReasonMigrationCompletionExtended && e.Regarding.Name == vmi.Name {
					assert.Equal(t, virtkit.EventTypeNormal, e.Type)
					notes = append(notes, e.Note)
				}
			}
			if extended {
				require.Len(t, notes, 1, "one event announces the extension")
				assert.Contains(t, notes[0], string(mig.UID))
				assert.Contains(t, notes[0], "runs past the completion timeout of 1s")
			} else {
				assert.Empty(t, notes)
			}
		})
	}
}
