package metrics

import (
	"context"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// FinishedMigration is the final record of a migration a node ran as the
// source.
type FinishedMigration struct {
	// MigrationUID is the VirtualMachineInstanceMigration's UID.
	MigrationUID types.UID
	// Stats are the job's final counters.
	Stats hypervisor.JobStats
	// Engine is the engine's final view, nil when no engine ran it.
	Engine EngineSnapshotter
}

// FinishedMigrationSource is implemented by a [MigrationSource] that keeps
// the final counters of the last migration each VMI ran from its node.
// The [DomainCollector] then serves kubevirt_vmi_migration_data_*, the
// transfer and dirty rates and the engine's virtkit_migration_* series of a
// finished migration, with their final values, for as long as its
// VirtualMachineInstanceMigration exists. It must be cheap and not block.
type FinishedMigrationSource interface {
	LastMigration(namespace, name string) (FinishedMigration, bool)
}

// emitFinishedMigrations writes the final job counters of every final
// migration whose VMIM still exists, from the source node that ran it,
// unless that node runs a newer migration of the same VMI.
func (c *DomainCollector) emitFinishedMigrations(ctx context.Context, e *emitter, live []jobTask) {
	have := false
	for _, n := range c.order {
		if _, ok := n.src.Migrations.(FinishedMigrationSource); ok {
			have = true
		}
	}
	if !have {
		return
	}
	var migs virtkit.VirtualMachineInstanceMigrationList
	if err := c.objects.List(ctx, &migs, store.ListOptions{}); err != nil {
		c.listErrors.Add(1)
		c.log.Warn("metrics: listing migrations", "error", err)
		return
	}
	running := make(map[[3]string]bool, len(live))
	for _, j := range live {
		running[[3]string{j.node.src.Name, j.namespace, j.name}] = true
	}
	noLabels := vmiLabels{}
	for i := range migs.Items {
		m := &migs.Items[i]
		ms := m.Status.MigrationState
		if !m.IsFinal() || ms == nil {
			continue
		}
		n := c.nodes[ms.SourceNode]
		if n == nil || running[[3]string{ms.SourceNode, m.Namespace, m.Spec.VMIName}] {
			continue
		}
		src, ok := n.src.Migrations.(FinishedMigrationSource)
		if !ok {
			continue
		}
		fm, ok := src.LastMigration(m.Namespace, m.Spec.VMIName)
		if !ok || fm.MigrationUID != m.UID {
			continue
		}
		e.reset(&noLabels, n.src.Name, m.Namespace, m.Spec.VMIName)
		js := &fm.Stats
		e.uint(c.f.migDataTotal, js.DataTotal)
		e.uint(c.f.migDataRemaining, js.DataRemaining)
		e.uint(c.f.migDataProcessed, js.DataProcessed)
		e.uint(c.f.migDirtyRate, js.MemoryDirtyRate)
		e.uint(c.f.migTransferRate, js.MemoryBps)
		if js.Mode == hypervisor.ModePostCopy {
			e.uint(c.f.migPostCopyFaults, js.PostcopyRequests)
		}
		if fm.Engine != nil {
			emitEngineSnapshot(e, &c.f.engine, fm.Engine)
		}
	}
}
