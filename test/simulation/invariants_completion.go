package simulation

import (
	"math"
	"strconv"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/migration"
)

// InvCompletionExtension: a migration runs past its completion timeout
// (the engine's CompletionExtended decision) only where its resolved
// configuration allows it (virtkitMaxCompletionTimeoutPerGiB set above
// completionTimeoutPerGiB: never under a MigrationPolicy's explicit
// timeout), and its extended deadline never passes the operator's bound.
const InvCompletionExtension = "completion-extension"

// Simulation's cluster migration timeouts: 5 s per GiB (a 128Mi guest
// counts as 1 GB) is shorter than a migration takes over the
// slow-migration-network fault's 4 MiB/s or under the MigrationPolicy's
// 8Mi/s cap, so the completion extension is exercised; its 120 s bound
// stays well under the ten minutes of quiescence, so the
// migration-terminal invariant still holds with every extension.
const (
	simCompletionTimeoutPerGiB    int64 = 5
	simMaxCompletionTimeoutPerGiB int64 = 120
)

// simMigrationConfiguration is the cluster migration configuration of
// the embedded simulation.
func simMigrationConfiguration() *virtkit.MigrationConfiguration {
	c, m := simCompletionTimeoutPerGiB, simMaxCompletionTimeoutPerGiB
	return &virtkit.MigrationConfiguration{CompletionTimeoutPerGiB: &c, VirtkitMaxCompletionTimeoutPerGiB: &m}
}

// checkCompletionExtension checks InvCompletionExtension on the
// migrations' recorded states.
func (c *checker) checkCompletionExtension(out *[]Violation, step int, migs []virtkit.VirtualMachineInstanceMigration) {
	for _, m := range migs {
		ms := m.Status.MigrationState
		if ms == nil || ms.Engine == nil {
			continue
		}
		for _, d := range ms.Engine.Decisions {
			if d.Rule != migration.RuleCompletionExtended {
				continue
			}
			cfg := ms.MigrationConfiguration
			switch {
			case cfg == nil || cfg.VirtkitMaxCompletionTimeoutPerGiB == nil || *cfg.VirtkitMaxCompletionTimeoutPerGiB <= 0:
				c.report(out, step, InvCompletionExtension, "migration %s/%s ran past its completion timeout without virtkitMaxCompletionTimeoutPerGiB in its configuration (policy %v)",
					m.Namespace, m.Name, deref(ms.MigrationPolicyName))
			case cfg.CompletionTimeoutPerGiB != nil && *cfg.VirtkitMaxCompletionTimeoutPerGiB <= *cfg.CompletionTimeoutPerGiB:
				c.report(out, step, InvCompletionExtension, "migration %s/%s ran past its completion timeout of %d s per GiB with a bound of %d s per GiB",
					m.Namespace, m.Name, *cfg.CompletionTimeoutPerGiB, *cfg.VirtkitMaxCompletionTimeoutPerGiB)
			}
			deadline, bound := seconds(d.Numbers["deadline"]), seconds(d.Numbers["maxCompletionTimeout"])
			if math.IsNaN(deadline) || math.IsNaN(bound) || deadline > bound {
				c.report(out, step, InvCompletionExtension, "migration %s/%s: extended deadline %q past (or without) the bound %q",
					m.Namespace, m.Name, d.Numbers["deadline"], d.Numbers["maxCompletionTimeout"])
			}
		}
	}
}

// seconds parses a decision's figure such as "24.865 s" (NaN if it
// cannot).
func seconds(s string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), " s"), 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

func deref(s *string) string {
	if s == nil {
		return "none"
	}
	return *s
}
