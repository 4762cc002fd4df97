package metrics

import (
	"context"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration"
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

// GuestFilesystem is one filesystem a VMI's guest agent reports.
type GuestFilesystem struct {
	DiskName       string
	MountPoint     string
	FileSystemType string
	UsedBytes      int64
	TotalBytes     int64
}

// FilesystemLister returns the filesystems a VMI's guest agent reports (a
// node agent's, through package metrics/wire). An error means "no
// information" (agent not connected) and yields no filesystem series. It
// must not block.
type FilesystemLister interface {
	FilesystemList(namespace, name string) ([]GuestFilesystem, error)
}

// Histogram is a cumulative histogram snapshot: Buckets[i] counts the
// observations <= Bounds[i].
type Histogram struct {
	Count   uint64
	Sum     float64
	Bounds  []float64
	Buckets []uint64
}

// ControllerStats are one reconciler's numbers at one moment: its work
// queue (client-go's workqueue quantities), its reconciles and its
// watches.
type ControllerStats struct {
	// Name is the label value of every series (name / controller).
	Name string

	QueueDepth                     int64
	QueueAdds                      uint64
	QueueRetries                   uint64
	QueueWait                      Histogram
	WorkDuration                   Histogram
	UnfinishedWorkSeconds          float64
	LongestRunningProcessorSeconds float64

	Reconciles      uint64
	ReconcileErrors uint64
	TerminalErrors  uint64
	Requeues        uint64
	ReconcileTime   Histogram
	ActiveWorkers   int64

	// Relists counts lists after start, resync or watch expiry; a
	// reconciler that has listed once is ready.
	Relists uint64
}

// StatsProvider is a reconciler's statistics snapshot (a
// reconcile.Controller's, through package metrics/wire). It must be
// cheap and not block.
type StatsProvider interface {
	Stats() ControllerStats
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
	_ JobStatser        = hypervisor.MigrationJob(nil)
	_ EngineSnapshotter = (*migration.Engine)(nil)
)

// DomainName is the libvirt domain name of a VMI, "<namespace>_<name>",
// the name node agents give the domains they define.
func DomainName(namespace, name string) string { return namespace + "_" + name }

// SplitDomainName reverses DomainName: namespaces are DNS labels and never
// contain '_', so the first '_' separates them.
func SplitDomainName(domain string) (namespace, name string, ok bool) {
	ns, n, found := strings.Cut(domain, "_")
	if !found || ns == "" || n == "" {
		return "", "", false
	}
	return ns, n, true
}
