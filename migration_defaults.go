package virtkit

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// KubeVirt's cluster-wide migration defaults.
const (
	DefaultParallelMigrationsPerCluster      uint32 = 5
	DefaultParallelOutboundMigrationsPerNode uint32 = 2
	DefaultCompletionTimeoutPerGiB           int64  = 150
	DefaultProgressTimeout                   int64  = 150
	DefaultMaxDowntimeMs                     uint64 = 900
)

// DefaultMigrationConfiguration returns KubeVirt's cluster migration
// defaults: 5 parallel migrations per cluster, 2 outbound per node,
// unlimited bandwidth ("0Mi"), 150 s per GiB to complete, 150 s without
// progress, maxDowntimeMs 900, no auto-converge, no post-copy, no workload
// disruption, no unsafe override; virtkit's completion extension
// (VirtkitMaxCompletionTimeoutPerGiB) off.
func DefaultMigrationConfiguration() *MigrationConfiguration {
	bw := resource.MustParse("0Mi")
	f := false
	return &MigrationConfiguration{
		ParallelMigrationsPerCluster:      ptrOf(DefaultParallelMigrationsPerCluster),
		ParallelOutboundMigrationsPerNode: ptrOf(DefaultParallelOutboundMigrationsPerNode),
		BandwidthPerMigration:             &bw,
		CompletionTimeoutPerGiB:           ptrOf(DefaultCompletionTimeoutPerGiB),
		ProgressTimeout:                   ptrOf(DefaultProgressTimeout),
		MaxDowntimeMs:                     ptrOf(DefaultMaxDowntimeMs),
		UnsafeMigrationOverride:           ptrOf(f),
		AllowAutoConverge:                 ptrOf(f),
		AllowPostCopy:                     ptrOf(f),
		// allowWorkloadDisruption follows allowPostCopy when unset
		// (GetMigrationConfiguration); resolved in withDisruption.
	}
}

// ClusterMigrationConfiguration returns the effective cluster
// configuration: KubeVirt's defaults with every field set in override on
// top (fields override leaves nil keep their default), as KubeVirt
// unmarshals the KubeVirt CR's migrations section over its defaults.
// allowWorkloadDisruption follows allowPostCopy when neither sets it.
func ClusterMigrationConfiguration(override *MigrationConfiguration) *MigrationConfiguration {
	out := DefaultMigrationConfiguration()
	if o := override; o != nil {
		o = o.DeepCopy()
		setIf(&out.ParallelMigrationsPerCluster, o.ParallelMigrationsPerCluster)
		setIf(&out.ParallelOutboundMigrationsPerNode, o.ParallelOutboundMigrationsPerNode)
		setIf(&out.BandwidthPerMigration, o.BandwidthPerMigration)
		setIf(&out.CompletionTimeoutPerGiB, o.CompletionTimeoutPerGiB)
		setIf(&out.VirtkitMaxCompletionTimeoutPerGiB, o.VirtkitMaxCompletionTimeoutPerGiB)
		setIf(&out.ProgressTimeout, o.ProgressTimeout)
		setIf(&out.MaxDowntimeMs, o.MaxDowntimeMs)
		setIf(&out.UnsafeMigrationOverride, o.UnsafeMigrationOverride)
		setIf(&out.AllowAutoConverge, o.AllowAutoConverge)
		setIf(&out.AllowPostCopy, o.AllowPostCopy)
		setIf(&out.AllowWorkloadDisruption, o.AllowWorkloadDisruption)
		setIf(&out.DisableTLS, o.DisableTLS)
		setIf(&out.Network, o.Network)
	}
	if out.AllowWorkloadDisruption == nil {
		out.AllowWorkloadDisruption = ptrOf(*out.AllowPostCopy)
	}
	return out
}

func setIf[T any](dst **T, src *T) {
	if src != nil {
		*dst = src
	}
}

func ptrOf[T any](v T) *T { return &v }
