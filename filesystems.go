package virtkit

import (
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Filesystem shares the volume of the same name with the guest over
// virtiofs instead of presenting it as a disk: the guest mounts it by its
// tag, the volume's name (mount -t virtiofs NAME /mnt). virtkit shares
// configMap, secret, serviceAccount and downwardAPI volumes, whose files
// the node writes to a host directory served by virtiofsd; other volume
// kinds are refused as NotSupported by the domain builder.
type Filesystem struct {
	// Name is the volume shared, and the guest's mount tag.
	Name string `json:"name"`
	// Virtiofs selects virtiofs, the only filesystem type KubeVirt has.
	Virtiofs *FilesystemVirtiofs `json:"virtiofs"`
}

// FilesystemVirtiofs selects a virtiofs share; it has no settings.
type FilesystemVirtiofs struct{}

// VirtiofsSharable says whether a volume of this source can be shared by
// virtiofs on virtkit: the config volumes, whose content the node writes,
// and containerPath volumes (directories by nature).
func VirtiofsSharable(s *VolumeSource) bool {
	return s.ConfigMap != nil || s.Secret != nil || s.ServiceAccount != nil || s.DownwardAPI != nil || s.ContainerPath != nil
}

// filesystems checks devices.filesystems as KubeVirt's admitter does: a
// name that is a volume and no disk, given once, with virtiofs set. It
// returns the names of the volumes shared.
func (v *vmiValidator) filesystems(disks map[string]bool) map[string]bool {
	shared := map[string]bool{}
	fp := v.sp.Child("domain", "devices", "filesystems")
	for i := range v.spec.Domain.Devices.Filesystems {
		fs := &v.spec.Domain.Devices.Filesystems[i]
		p := fp.Index(i)
		if fs.Virtiofs == nil {
			v.add(field.Required(p.Child("virtiofs"), "virtiofs is the only filesystem type"))
		}
		if fs.Name == "" {
			v.add(field.Required(p.Child("name"), ""))
			continue
		}
		for _, msg := range validation.IsDNS1123Label(fs.Name) {
			v.add(field.Invalid(p.Child("name"), fs.Name, msg))
		}
		switch {
		case shared[fs.Name]:
			v.add(field.Duplicate(p.Child("name"), fs.Name))
		case disks[fs.Name]:
			v.add(field.Invalid(p.Child("name"), fs.Name, "a volume is either a disk or a filesystem"))
		}
		shared[fs.Name] = true
		vol, ok := v.volumes[fs.Name]
		if !ok {
			v.add(field.NotFound(p.Child("name"), fs.Name))
			continue
		}
		if !VirtiofsSharable(&vol.VolumeSource) {
			// KubeVirt reports filesystems it cannot share (storage
			// volumes without its gate) at the list, without an index.
			v.add(&field.Error{Type: field.ErrorTypeNotSupported, Field: fp.String(), BadValue: fs.Name,
				Detail: "virtkit shares configMap, secret, serviceAccount and downwardAPI volumes by virtiofs; its other volumes are disk images, not directories"})
		}
	}
	return shared
}
