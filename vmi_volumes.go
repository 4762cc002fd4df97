package virtkit

import "k8s.io/apimachinery/pkg/api/resource"

// Volume is a named storage source used by a disk.
type Volume struct {
	// Name is the volume's name; the disk or filesystem of the same name uses
	// it.
	Name         string `json:"name"`
	VolumeSource `json:",inline"`
}

// VolumeSource is where a volume's data comes from; exactly one.
type VolumeSource struct {
	// HostDisk is a disk image file on the node.
	HostDisk *HostDisk `json:"hostDisk,omitempty"`
	// PersistentVolumeClaim is a claim in the VMI's namespace.
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
	// CloudInitNoCloud is cloud-init user and network data in the NoCloud
	// format.
	CloudInitNoCloud *CloudInitNoCloudSource `json:"cloudInitNoCloud,omitempty"`
	// CloudInitConfigDrive is cloud-init user and network data in the
	// ConfigDrive format.
	CloudInitConfigDrive *CloudInitConfigDriveSource `json:"cloudInitConfigDrive,omitempty"`
	// ContainerDisk is a disk image from a container image; the guest's writes
	// are lost when it stops.
	ContainerDisk *ContainerDiskSource `json:"containerDisk,omitempty"`
	// Ephemeral is a claim the guest reads, with its writes kept in a
	// temporary overlay.
	Ephemeral *EphemeralVolumeSource `json:"ephemeral,omitempty"`
	// EmptyDisk is a new, empty disk that lives as long as the VMI.
	EmptyDisk *EmptyDiskSource `json:"emptyDisk,omitempty"`
	// DataVolume is a DataVolume in the VMI's namespace.
	DataVolume *DataVolumeSource `json:"dataVolume,omitempty"`
	// ConfigMap exposes a ConfigMap to the guest as a disk or filesystem.
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`
	// Secret exposes a Secret to the guest as a disk or filesystem.
	Secret *SecretVolumeSource `json:"secret,omitempty"`
	// ServiceAccount exposes a service account's token to the guest.
	ServiceAccount *ServiceAccountVolumeSource `json:"serviceAccount,omitempty"`
	// DownwardAPI exposes fields of the VMI to the guest.
	DownwardAPI *DownwardAPIVolumeSource `json:"downwardAPI,omitempty"`
	// Sysprep is a Windows answer file from a ConfigMap or Secret.
	Sysprep *SysprepSource `json:"sysprep,omitempty"`
	// DownwardMetrics exposes host and guest metrics to the guest.
	DownwardMetrics *DownwardMetricsVolumeSource `json:"downwardMetrics,omitempty"`
	// ContainerPath shares a directory of the VMI's runtime environment
	// (in KubeVirt a path of the launcher pod's container) with the guest
	// through a virtiofs filesystem.
	ContainerPath *ContainerPathVolumeSource `json:"containerPath,omitempty"`
}

// HostDiskType is Disk (must exist) or DiskOrCreate.
type HostDiskType string

// Host disk types.
const (
	HostDiskExists         HostDiskType = "Disk"
	HostDiskExistsOrCreate HostDiskType = "DiskOrCreate"
)

// HostDisk is an image file on the node.
type HostDisk struct {
	// Path is the image file's path on the node.
	Path string `json:"path"`
	// Type is Disk (the image must exist) or DiskOrCreate (it is created with
	// capacity if missing).
	Type HostDiskType `json:"type"`
	// Capacity is the size of an image created by DiskOrCreate.
	Capacity resource.Quantity `json:"capacity,omitempty"`
	// Shared marks the image as shared between nodes, so the VMI may migrate.
	Shared *bool `json:"shared,omitempty"`
}

// PersistentVolumeClaimVolumeSource uses a claim by name.
type PersistentVolumeClaimVolumeSource struct {
	// ClaimName names the claim.
	ClaimName string `json:"claimName"`
	// ReadOnly attaches the claim read-only.
	ReadOnly bool `json:"readOnly,omitempty"`
	// Hotpluggable marks the volume as hot-plugged.
	Hotpluggable bool `json:"hotpluggable,omitempty"`
}

// CloudInitNoCloudSource is cloud-init NoCloud data.
type CloudInitNoCloudSource struct {
	// UserDataSecretRef (JSON secretRef) names a Secret holding the user data.
	UserDataSecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// UserDataBase64 is the user data, base64 encoded.
	UserDataBase64 string `json:"userDataBase64,omitempty"`
	// UserData is the user data.
	UserData string `json:"userData,omitempty"`
	// NetworkDataSecretRef names a Secret holding the network data.
	NetworkDataSecretRef *LocalObjectReference `json:"networkDataSecretRef,omitempty"`
	// NetworkDataBase64 is the network data, base64 encoded.
	NetworkDataBase64 string `json:"networkDataBase64,omitempty"`
	// NetworkData is the network data.
	NetworkData string `json:"networkData,omitempty"`
}

// CloudInitConfigDriveSource is cloud-init ConfigDrive data.
type CloudInitConfigDriveSource struct {
	// UserDataSecretRef (JSON secretRef) names a Secret holding the user data.
	UserDataSecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// UserDataBase64 is the user data, base64 encoded.
	UserDataBase64 string `json:"userDataBase64,omitempty"`
	// UserData is the user data.
	UserData string `json:"userData,omitempty"`
	// NetworkDataSecretRef names a Secret holding the network data.
	NetworkDataSecretRef *LocalObjectReference `json:"networkDataSecretRef,omitempty"`
	// NetworkDataBase64 is the network data, base64 encoded.
	NetworkDataBase64 string `json:"networkDataBase64,omitempty"`
	// NetworkData is the network data.
	NetworkData string `json:"networkData,omitempty"`
}

// ContainerDiskSource is a disk image shipped in a container image.
type ContainerDiskSource struct {
	// Image is the container image holding the disk image.
	Image string `json:"image"`
	// ImagePullSecret names the secret used to pull the image.
	ImagePullSecret string `json:"imagePullSecret,omitempty"`
	// Path is the disk image's path in the container image; the first image
	// under /disk by default.
	Path string `json:"path,omitempty"`
	// ImagePullPolicy is when the image is pulled: Always, Never or
	// IfNotPresent.
	ImagePullPolicy PullPolicy `json:"imagePullPolicy,omitempty"`
}

// EphemeralVolumeSource is a claim used read-only with a throwaway overlay.
type EphemeralVolumeSource struct {
	// PersistentVolumeClaim is the claim read through the overlay.
	PersistentVolumeClaim *PersistentVolumeClaimVolumeSource `json:"persistentVolumeClaim,omitempty"`
}

// EmptyDiskSource is a blank sparse disk that lives as long as the VMI.
type EmptyDiskSource struct {
	// Capacity is the disk's size.
	Capacity resource.Quantity `json:"capacity"`
}

// DataVolumeSource uses a DataVolume by name.
type DataVolumeSource struct {
	// Name names the DataVolume.
	Name string `json:"name"`
	// Hotpluggable marks the volume as hot-plugged.
	Hotpluggable bool `json:"hotpluggable,omitempty"`
}
