package virtkit

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CDI's reason and message for a clone whose source does not exist (yet):
// the DataVolume waits, its Bound condition Unknown with this reason.
const (
	DataVolumeReasonCloneWithoutSource = "CloneWithoutSource"
)

// MessageCloneWithoutSource is CDI's message for a clone source that does
// not exist: kind is "pvc" or "snapshot".
func MessageCloneWithoutSource(kind, name string) string {
	return "The source " + kind + " " + name + " doesn't exist"
}

// sizeFromSource reports whether a DataVolume may leave its size out: a
// clone of a claim or a volume snapshot takes the source's size.
func sizeFromSource(spec *DataVolumeSpec) bool {
	return spec.Source != nil && (spec.Source.PVC != nil || spec.Source.Snapshot != nil)
}

// validateSnapshotSource checks spec.source.snapshot: it names a volume
// snapshot (one a VirtualMachineSnapshot took, as its content's
// volumeBackups[].volumeSnapshotName records).
func validateSnapshotSource(s *DataVolumeSourceSnapshot, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "the VolumeSnapshot to restore"))
	}
	return errs
}

// VolumeSnapshotRef is a volume snapshot found in a
// VirtualMachineSnapshotContent: the content, and the backup of the claim
// it copied.
//
// +kubebuilder:object:generate=false
// +k8s:openapi-gen=false
type VolumeSnapshotRef struct {
	Content *VirtualMachineSnapshotContent
	Backup  *VolumeBackup
	// Ready reports whether the content says the snapshot is ready to use.
	Ready bool
}

// FindVolumeSnapshot looks up the volume snapshot name among contents (a
// namespace's VirtualMachineSnapshotContents): virtkit keeps no
// VolumeSnapshot objects, so a volume snapshot is known by the content
// that records it. ok is false when no content records it.
func FindVolumeSnapshot(contents []VirtualMachineSnapshotContent, name string) (ref VolumeSnapshotRef, ok bool) {
	for i := range contents {
		c := &contents[i]
		for j := range c.Spec.VolumeBackups {
			b := &c.Spec.VolumeBackups[j]
			if b.VolumeSnapshotName == nil || *b.VolumeSnapshotName != name {
				continue
			}
			ref = VolumeSnapshotRef{Content: c, Backup: b}
			if c.Status != nil {
				for _, st := range c.Status.VolumeSnapshotStatus {
					if st.VolumeSnapshotName == name && st.ReadyToUse != nil && *st.ReadyToUse {
						ref.Ready = true
					}
				}
				if c.Status.ReadyToUse != nil && *c.Status.ReadyToUse {
					ref.Ready = true
				}
			}
			return ref, true
		}
	}
	return VolumeSnapshotRef{}, false
}
