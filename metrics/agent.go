package metrics

import (
	"context"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/node"
)

// AgentMigrationSnapshotter is what a node agent reports about its
// outgoing migrations; *node.Agent satisfies it.
type AgentMigrationSnapshotter interface {
	MigrationSnapshots() []node.MigrationSnapshot
}

var _ AgentMigrationSnapshotter = (*node.Agent)(nil)

// AgentMigrations adapts a node agent's migration snapshots to a
// [MigrationSource]. The agent keeps each job's latest counters from the
// engine's own polls, so a scrape makes no extra hypervisor call; a job
// not polled yet and a migration without an engine give no series.
func AgentMigrations(a AgentMigrationSnapshotter) MigrationSource {
	return agentMigrations{a}
}

type agentMigrations struct{ a AgentMigrationSnapshotter }

// lastMigrationSnapshotter is a node agent that keeps the final snapshot
// of each VMI's last outgoing migration; *node.Agent is one.
type lastMigrationSnapshotter interface {
	LastMigrationSnapshot(namespace, name string) (node.MigrationSnapshot, bool)
}

var _ lastMigrationSnapshotter = (*node.Agent)(nil)

// LastMigration implements [FinishedMigrationSource] when the agent keeps
// its finished migrations' final snapshots.
func (s agentMigrations) LastMigration(namespace, name string) (FinishedMigration, bool) {
	l, ok := s.a.(lastMigrationSnapshotter)
	if !ok {
		return FinishedMigration{}, false
	}
	sn, ok := l.LastMigrationSnapshot(namespace, name)
	if !ok || !sn.HaveStats {
		return FinishedMigration{}, false
	}
	fm := FinishedMigration{MigrationUID: sn.MigrationUID, Stats: sn.Stats}
	if sn.Engine.Domain != "" {
		fm.Engine = engineCopy(sn.Engine)
	}
	return fm, true
}

func (s agentMigrations) Migrations() []Migration {
	snaps := s.a.MigrationSnapshots()
	out := make([]Migration, 0, len(snaps))
	for i := range snaps {
		sn := &snaps[i]
		m := Migration{Domain: node.DomainName(sn.Namespace, sn.Name)}
		if sn.HaveStats {
			m.Job = polledJob(sn.Stats)
		}
		// A zero snapshot (no Domain) means no engine runs the migration.
		if sn.Engine.Domain != "" {
			m.Engine = engineCopy(sn.Engine)
		}
		out = append(out, m)
	}
	return out
}

// polledJob serves counters polled earlier.
type polledJob hypervisor.JobStats

func (j polledJob) Stats(context.Context) (hypervisor.JobStats, error) {
	return hypervisor.JobStats(j), nil
}

type engineCopy migration.Snapshot

func (e engineCopy) Snapshot() migration.Snapshot { return migration.Snapshot(e) }
