package metrics

import (
	"context"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// ObjectLister lists virtkit objects; store.Store satisfies it.
type ObjectLister interface {
	List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error
}

// DomainStatser returns one domain's counters; hypervisor.Hypervisor
// satisfies it. It must honour ctx; a call that does not is abandoned
// (left running) when the scrape deadline passes.
type DomainStatser interface {
	Stats(ctx context.Context, domain string) (hypervisor.DomainStats, error)
}

// FilesystemLister returns the filesystems a VMI's guest agent reports;
// *node.Agent satisfies it. An error means "no information" (agent not
// connected) and yields no filesystem series. It must not block.
type FilesystemLister interface {
	FilesystemList(namespace, name string) ([]node.GuestFilesystem, error)
}

// StatsProvider is a controller's statistics snapshot;
// *controller.Controller satisfies it.
type StatsProvider interface {
	Stats() controller.Stats
}

// JobStatser returns a migration job's counters; hypervisor.MigrationJob
// satisfies it.
type JobStatser interface {
	Stats(ctx context.Context) (hypervisor.JobStats, error)
}

// EngineSnapshotter is the migration engine's view of a migration;
// *migration.Engine satisfies it. Snapshot must be cheap and not block.
type EngineSnapshotter interface {
	Snapshot() migration.Snapshot
}

// Migration is one outgoing migration a node runs: the domain, its
// hypervisor job, and optionally the engine steering it. Either may be
// nil: a nil Job gives no kubevirt_vmi_migration_data_* series, a nil
// Engine no virtkit_migration_* series.
type Migration struct {
	// Domain is the libvirt name ("<namespace>_<name>").
	Domain string
	Job    JobStatser
	Engine EngineSnapshotter
}

// MigrationSource lists the migrations a node is running as the source.
// It must be cheap and not block (a snapshot of a map).
type MigrationSource interface {
	Migrations() []Migration
}

var (
	_ ObjectLister      = store.Store(nil)
	_ DomainStatser     = hypervisor.Hypervisor(nil)
	_ FilesystemLister  = (*node.Agent)(nil)
	_ StatsProvider     = (*controller.Controller)(nil)
	_ JobStatser        = hypervisor.MigrationJob(nil)
	_ EngineSnapshotter = (*migration.Engine)(nil)
)
