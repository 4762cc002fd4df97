package virtkit

// UpdateVolumesStrategy is how a change of a running VM's volumes
// reaches its VMI.
type UpdateVolumesStrategy string

// Update volume strategies.
const (
	// UpdateVolumesStrategyReplacement applies the new volumes at the next
	// restart.
	UpdateVolumesStrategyReplacement UpdateVolumesStrategy = "Replacement"
	// UpdateVolumesStrategyMigration copies the changed volumes to their
	// new sources during a live migration.
	UpdateVolumesStrategyMigration UpdateVolumesStrategy = "Migration"
)
