package wire

import (
	"context"

	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/reconcile"
)

// AgentMigrationSnapshotter is what a node agent reports about its
// outgoing migrations; *node.Agent satisfies it.
type AgentMigrationSnapshotter interface {
	MigrationSnapshots() []node.MigrationSnapshot
}

var _ AgentMigrationSnapshotter = (*node.Agent)(nil)

// Controller adapts a reconciler's statistics to a [metrics.StatsProvider].
func Controller(c reconcile.StatsSource) metrics.StatsProvider { return controllerStats{c} }

type controllerStats struct{ c reconcile.StatsSource }

func (s controllerStats) Stats() metrics.ControllerStats {
	st := s.c.Stats()
	bounds := reconcile.LatencyBuckets()
	h := func(h reconcile.Histogram) metrics.Histogram {
		return metrics.Histogram{Count: h.Count, Sum: h.Sum, Bounds: bounds, Buckets: h.Buckets}
	}
	return metrics.ControllerStats{
		Name: st.Name, QueueDepth: st.QueueDepth, QueueAdds: st.QueueAdds, QueueRetries: st.QueueRetries,
		QueueWait: h(st.QueueWait), WorkDuration: h(st.WorkDuration),
		UnfinishedWorkSeconds: st.UnfinishedWorkSeconds, LongestRunningProcessorSeconds: st.LongestRunningProcessorSeconds,
		Reconciles: st.Reconciles, ReconcileErrors: st.ReconcileErrors, TerminalErrors: st.TerminalErrors,
		Requeues: st.Requeues, ReconcileTime: h(st.ReconcileTime), ActiveWorkers: st.ActiveWorkers, Relists: st.Relists,
	}
}

// GuestFilesystemLister is what a node agent reports about its guests'
// filesystems; *node.Agent satisfies it.
type GuestFilesystemLister interface {
	FilesystemList(namespace, name string) ([]node.GuestFilesystem, error)
}

var _ GuestFilesystemLister = (*node.Agent)(nil)

// Guest adapts a node agent's guest filesystems to a
// [metrics.FilesystemLister].
func Guest(a GuestFilesystemLister) metrics.FilesystemLister { return guestFilesystems{a} }

type guestFilesystems struct{ a GuestFilesystemLister }

func (g guestFilesystems) FilesystemList(namespace, name string) ([]metrics.GuestFilesystem, error) {
	fss, err := g.a.FilesystemList(namespace, name)
	if err != nil {
		return nil, err
	}
	out := make([]metrics.GuestFilesystem, len(fss))
	for i, fs := range fss {
		out[i] = metrics.GuestFilesystem{DiskName: fs.DiskName, MountPoint: fs.MountPoint, FileSystemType: fs.FileSystemType,
			UsedBytes: fs.UsedBytes, TotalBytes: fs.TotalBytes}
	}
	return out, nil
}

// agentStatus reports a node agent ready once its watch has listed the
// node's VMIs, while it is not fenced.
func agentStatus(a *node.Agent) metrics.HandlerStatus {
	return metrics.HandlerStatus{Node: a.Name(), Ready: func() bool {
		return a.Controller().Stats().Relists > 0 && !a.Fenced()
	}}
}

// AgentMigrations adapts a node agent's migration snapshots to a
// [metrics.MigrationSource]. The agent keeps each job's latest counters from the
// engine's own polls, so a scrape makes no extra hypervisor call; a job
// not polled yet and a migration without an engine give no series.
func AgentMigrations(a AgentMigrationSnapshotter) metrics.MigrationSource {
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
func (s agentMigrations) LastMigration(namespace, name string) (metrics.FinishedMigration, bool) {
	l, ok := s.a.(lastMigrationSnapshotter)
	if !ok {
		return metrics.FinishedMigration{}, false
	}
	sn, ok := l.LastMigrationSnapshot(namespace, name)
	if !ok || !sn.HaveStats {
		return metrics.FinishedMigration{}, false
	}
	fm := metrics.FinishedMigration{MigrationUID: sn.MigrationUID, Stats: sn.Stats}
	if sn.Engine.Domain != "" {
		fm.Engine = engineCopy(sn.Engine)
	}
	return fm, true
}

func (s agentMigrations) Migrations() []metrics.Migration {
	snaps := s.a.MigrationSnapshots()
	out := make([]metrics.Migration, 0, len(snaps))
	for i := range snaps {
		sn := &snaps[i]
		m := metrics.Migration{Domain: metrics.DomainName(sn.Namespace, sn.Name)}
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
