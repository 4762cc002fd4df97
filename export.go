package virtkit

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ExportGroupName is the API group of KubeVirt's VirtualMachineExport kind.
const ExportGroupName = "export.kubevirt.io"

// ExportSchemeGroupVersion is the group version of VirtualMachineExport:
// export.kubevirt.io/v1, the version KubeVirt 1.9 stores and its virtctl
// uses. Manifests of the deprecated v1beta1, which has the same schema,
// decode as v1.
var ExportSchemeGroupVersion = schema.GroupVersion{Group: ExportGroupName, Version: "v1"}

// KindVirtualMachineExport is the kind name of VirtualMachineExport.
const KindVirtualMachineExport = "VirtualMachineExport"

// DefaultExportTTL is how long an export lives when spec.ttlDuration is
// not set (KubeVirt's two hours): it is deleted that long after its
// creation.
const DefaultExportTTL = 2 * time.Hour

// ExportTokenHeader is the HTTP header, and the query parameter, that
// carries an export's token to its export server.
const ExportTokenHeader = "x-kubevirt-export-token"

// ExportTokenKey is the key of the token in an export's token Secret.
const ExportTokenKey = "token"

var (
	_ Object     = (*VirtualMachineExport)(nil)
	_ ObjectList = (*VirtualMachineExportList)(nil)
)

// VirtualMachineExport (export.kubevirt.io/v1) makes the volumes of a
// stopped VirtualMachine, of a VirtualMachineSnapshot or of one
// PersistentVolumeClaim downloadable over HTTPS, as raw and gzipped disk
// images, by whoever holds the export's token.
//
// +kubebuilder:object:root=true
type VirtualMachineExport struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels and annotations.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec names what to export.
	Spec VirtualMachineExportSpec `json:"spec"`
	// Status is where to download it.
	Status *VirtualMachineExportStatus `json:"status,omitempty"`
}

// VirtualMachineExportList is a list of VirtualMachineExports.
//
// +kubebuilder:object:root=true
type VirtualMachineExportList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the exports.
	Items []VirtualMachineExport `json:"items"`
}

// VirtualMachineExportSpec is what to export.
type VirtualMachineExportSpec struct {
	// Source is a VirtualMachine (apiGroup kubevirt.io), a
	// VirtualMachineSnapshot (apiGroup snapshot.kubevirt.io) or a
	// PersistentVolumeClaim (apiGroup "" or unset).
	Source TypedLocalObjectReference `json:"source"`
	// TokenSecretRef names a Secret in the export's namespace whose
	// "token" key is the token downloads must present; unset makes the
	// export create one (export-token-<name>).
	TokenSecretRef *string `json:"tokenSecretRef,omitempty"`
	// TTLDuration is how long after its creation the export is deleted;
	// unset is two hours.
	TTLDuration *metav1.Duration `json:"ttlDuration,omitempty"`
}

// VirtualMachineExportPhase is an export's phase.
type VirtualMachineExportPhase string

// Export phases (KubeVirt's names).
const (
	// ExportPending: the export server is not serving yet (the source is
	// in use, not populated, or the server is starting).
	ExportPending VirtualMachineExportPhase = "Pending"
	// ExportReady: the links in status can be downloaded.
	ExportReady VirtualMachineExportPhase = "Ready"
	// ExportTerminated: the export server is gone for good.
	ExportTerminated VirtualMachineExportPhase = "Terminated"
	// ExportSkipped: there is nothing to export (a VM without volumes).
	ExportSkipped VirtualMachineExportPhase = "Skipped"
)

// Export condition types.
const (
	// ExportConditionReady: the export server serves the volumes.
	ExportConditionReady ConditionType = "Ready"
	// ExportConditionPVCReady: the exported claims are bound.
	ExportConditionPVCReady ConditionType = "PVCReady"
	// ExportConditionVolumesCreated: the volumes of a snapshot source are
	// available to export.
	ExportConditionVolumesCreated ConditionType = "VolumesCreated"
)

// Export condition reasons (KubeVirt's strings).
const (
	ExportReasonInitializing = "Initializing"
	ExportReasonInUse        = "InUse"
	ExportReasonPodPending   = "PodPending"
	ExportReasonPodReady     = "PodReady"
	ExportReasonPodCompleted = "PodCompleted"
	ExportReasonUnknown      = "Unknown"
	ExportReasonPVCBound     = "PVCBound"
	ExportReasonPVCPending   = "PVCPending"
	ExportReasonPVCNotFound  = "PVCNotFound"
	ExportReasonNoVolumes    = "VMNoVolumes"
	// Reasons of VolumesCreated, for a snapshot source.
	ExportReasonAllPVCsReady      = "AllPVCsReady"
	ExportReasonNotAllPVCsCreated = "NotAllPVCsCreated"
	ExportReasonSnapshotNoVolumes = "VMSnapshotNoVolumes"
)

// ExportVolumeFormat is the form a volume is served in.
type ExportVolumeFormat string

// Export volume formats (KubeVirt's v1 and v1beta1 names).
const (
	// ExportFormatRaw is the disk image as raw bytes.
	ExportFormatRaw ExportVolumeFormat = "raw"
	// ExportFormatGzip is the raw disk image, gzipped.
	ExportFormatGzip ExportVolumeFormat = "gzip"
	// ExportFormatDir is a directory listing of a filesystem claim's root.
	ExportFormatDir ExportVolumeFormat = "dir"
	// ExportFormatArchive is a filesystem claim's root as a tar.gz.
	ExportFormatArchive ExportVolumeFormat = "tar.gz"
)

// VirtualMachineExportStatus is an export's progress and links.
type VirtualMachineExportStatus struct {
	// Phase is Pending, Ready, Terminated or Skipped.
	Phase VirtualMachineExportPhase `json:"phase,omitempty"`
	// Links are the URLs of the exported volumes.
	Links *VirtualMachineExportLinks `json:"links,omitempty"`
	// TokenSecretRef names the Secret holding the token downloads present.
	TokenSecretRef *string `json:"tokenSecretRef,omitempty"`
	// TTLExpirationTime is when the export is deleted (its creation plus
	// its TTL).
	TTLExpirationTime *metav1.Time `json:"ttlExpirationTime,omitempty"`
	// ServiceName names the export server (virt-export-<name>).
	ServiceName string `json:"serviceName,omitempty"`
	// VirtualMachineName is the VM exported, directly or through a
	// snapshot of it.
	VirtualMachineName *string `json:"virtualMachineName,omitempty"`
	// Conditions are Ready, PVCReady and, for a snapshot source,
	// VolumesCreated.
	// +listType=atomic
	Conditions []Condition `json:"conditions,omitempty"`
}

// VirtualMachineExportLinks are the export's links inside and outside the
// cluster.
type VirtualMachineExportLinks struct {
	// Internal are the links as seen from inside the cluster.
	Internal *VirtualMachineExportLink `json:"internal,omitempty"`
	// External are the links as seen from outside it.
	External *VirtualMachineExportLink `json:"external,omitempty"`
}

// VirtualMachineExportLink lists the exported volumes with the CA that
// signed the export server's certificate.
type VirtualMachineExportLink struct {
	// Cert is the PEM CA certificate to verify the export server with.
	Cert string `json:"cert"`
	// Volumes are the exported volumes.
	// +listType=map
	// +listMapKey=name
	Volumes []VirtualMachineExportVolume `json:"volumes,omitempty"`
}

// VirtualMachineExportVolume is one exported volume and its formats.
type VirtualMachineExportVolume struct {
	// Name is the volume's (the claim's) name.
	Name string `json:"name"`
	// Formats are the URLs the volume is served at, one per format.
	// +listType=map
	// +listMapKey=format
	Formats []VirtualMachineExportVolumeFormat `json:"formats,omitempty"`
}

// VirtualMachineExportVolumeFormat is a format and the URL serving it.
type VirtualMachineExportVolumeFormat struct {
	// Format is raw, gzip, dir or tar.gz.
	Format ExportVolumeFormat `json:"format"`
	// URL serves the volume in that format.
	URL string `json:"url"`
}
