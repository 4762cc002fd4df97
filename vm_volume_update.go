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

// VolumeIsMigrated reports whether a volume migration copies the VMI's
// volume name (status.migratedVolumes lists it): its disk crosses to the
// destination claim with the guest, so where its source claim lives does
// not keep the VMI from migrating.
func VolumeIsMigrated(vmi *VirtualMachineInstance, name string) bool {
	for _, mv := range vmi.Status.MigratedVolumes {
		if mv.VolumeName == name {
			return true
		}
	}
	return false
}
