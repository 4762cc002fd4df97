package simulation

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/store"
)

// A guest migrating under the MigrationPolicy's 8Mi/s cap needs longer
// than the simulation's 10 s completion timeout; the model says it
// converges, so it runs past the timeout and succeeds, and the checker
// finds the extension within its bound. An extension the configuration
// does not allow, or past its bound, is reported: the check can fail.
func TestCompletionExtensionInvariant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := NewHarness(ctx, HarnessOptions{Seed: 11})
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Close()) }()
	chk, vs := runOps(ctx, t, h, []Op{
		{Name: "apply-migration-policy", Target: "mp-0", N: 3, Advance: 1000}, // 8Mi
		{Name: "apply-vm", Target: "vm-0", N: 4, Advance: 20000},
		{Name: "migrate", Target: "vm-0", Advance: 90000},
	})
	require.Empty(t, vs)
	var migs virtkit.VirtualMachineInstanceMigrationList
	require.NoError(t, h.Cluster.Store().List(asUser(ctx), &migs, store.ListOptions{}))
	require.Len(t, migs.Items, 1)
	m := migs.Items[0]
	ms := m.Status.MigrationState
	require.NotNil(t, ms)
	require.Equal(t, virtkit.MigrationSucceeded, m.Status.Phase, "%+v", ms)
	require.NotNil(t, ms.Engine)
	var extended *virtkit.MigrationEngineDecision
	for i, d := range ms.Engine.Decisions {
		if d.Rule == migration.RuleCompletionExtended {
			extended = &ms.Engine.Decisions[i]
		}
	}
	require.NotNil(t, extended, "the migration ran past its timeout: %+v", ms.Engine.Decisions)
	assert.Greater(t, ms.EndTimestamp.Sub(ms.StartTimestamp.Time), time.Duration(simCompletionTimeoutPerGiB)*time.Second)
	final, err := chk.final(asUser(ctx), 3)
	require.NoError(t, err)
	assert.Empty(t, final)

	for name, edit := range map[string]func(*virtkit.VirtualMachineInstanceMigration){
		"no bound configured": func(m *virtkit.VirtualMachineInstanceMigration) {
			m.Status.MigrationState.MigrationConfiguration.VirtkitMaxCompletionTimeoutPerGiB = nil
		},
		"bound not above the timeout": func(m *virtkit.VirtualMachineInstanceMigration) {
			c := m.Status.MigrationState.MigrationConfiguration
			c.VirtkitMaxCompletionTimeoutPerGiB = c.CompletionTimeoutPerGiB
		},
		"deadline past the bound": func(m *virtkit.VirtualMachineInstanceMigration) {
			for i := range m.Status.MigrationState.Engine.Decisions {
				if d := &m.Status.MigrationState.Engine.Decisions[i]; d.Rule == migration.RuleCompletionExtended {
					d.Numbers["deadline"] = "9999 s"
				}
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			bad := m.DeepCopy()
			edit(bad)
			var out []Violation
			newChecker(h).checkCompletionExtension(&out, 0, []virtkit.VirtualMachineInstanceMigration{*bad})
			require.Len(t, out, 1)
			assert.Equal(t, InvCompletionExtension, out[0].Invariant)
		})
	}
}
