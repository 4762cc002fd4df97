package virtkit

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// CDIGroupName is the API group of the Containerized Data Importer's kinds.
const CDIGroupName = "cdi.kubevirt.io"

// CDISchemeGroupVersion is the group version of DataVolume.
var CDISchemeGroupVersion = schema.GroupVersion{Group: CDIGroupName, Version: "v1beta1"}

// KindDataVolume is the kind name of DataVolume.
const KindDataVolume = "DataVolume"

var (
	_ Object     = (*DataVolume)(nil)
	_ ObjectList = (*DataVolumeList)(nil)
)

// DataVolume is CDI's DataVolume (cdi.kubevirt.io/v1beta1): a disk image
// imported, cloned or created blank into a claim that a VMI's dataVolume
// volume then uses. A VM's dataVolumeTemplates create DataVolumes it owns.
//
// +kubebuilder:object:root=true
type DataVolume struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the object's name, namespace, labels, annotations and
	// the other fields every object has.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is where the data comes from and the storage it is written to.
	Spec DataVolumeSpec `json:"spec"`
	// Status is the import's progress.
	Status DataVolumeStatus `json:"status,omitempty"`
}

// DataVolumeList is a list of DataVolumes.
//
// +kubebuilder:object:root=true
type DataVolumeList struct {
	metav1.TypeMeta `json:",inline"`
	// Metadata is the list's resource version and continuation token.
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the data volumes.
	Items []DataVolume `json:"items"`
}

// DataVolumeSpec is the desired DataVolume: where the data comes from and
// the claim it lands in (pvc, or storage with defaults filled in).
type DataVolumeSpec struct {
	// Source is where the data comes from; exactly one source type.
	Source *DataVolumeImportSource `json:"source,omitempty"`
	// SourceRef names a DataSource to import from; virtkit does not support
	// it.
	SourceRef *DataVolumeSourceRef `json:"sourceRef,omitempty"`
	// PVC is the claim, taken as written.
	PVC *PersistentVolumeClaimSpec `json:"pvc,omitempty"`
	// Storage is the claim with CDI's defaults (access modes, volume
	// mode and, for imports, the size) filled in by the storage class.
	Storage *PersistentVolumeClaimSpec `json:"storage,omitempty"`
	// PriorityClassName is the priority class of the import's workers.
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// ContentType is kubevirt (a disk image, the default) or archive (a tar
	// archive extracted into a filesystem, which virtkit does not support).
	ContentType DataVolumeContentType `json:"contentType,omitempty"`
	// Checkpoints drive a multi-stage (warm) import; virtkit does not support
	// them.
	Checkpoints []DataVolumeCheckpoint `json:"checkpoints,omitempty"`
	// FinalCheckpoint marks the last checkpoint of a multi-stage import.
	FinalCheckpoint bool `json:"finalCheckpoint,omitempty"`
	// Preallocation asks for a fully allocated target image.
	Preallocation *bool `json:"preallocation,omitempty"`
}

// DataVolumeContentType is what the imported data is.
type DataVolumeContentType string

// Content types.
const (
	DataVolumeKubeVirt DataVolumeContentType = "kubevirt"
	DataVolumeArchive  DataVolumeContentType = "archive"
)

// DataVolumeCheckpoint is one stage of a multi-stage import.
type DataVolumeCheckpoint struct {
	// Previous is the snapshot the checkpoint's delta starts from.
	Previous string `json:"previous"`
	// Current is the snapshot the checkpoint's delta ends at.
	Current string `json:"current"`
}

// DataVolumeSourceRef names a DataSource object.
type DataVolumeSourceRef struct {
	// Kind is the kind of the referenced source, DataSource.
	Kind string `json:"kind"`
	// Namespace is the source's namespace; the data volume's by default.
	Namespace *string `json:"namespace,omitempty"`
	// Name is the source's name.
	Name string `json:"name"`
}

// DataVolumeImportSource is where a DataVolume's data comes from;
// exactly one field is set (CDI calls it DataVolumeSource; that name is
// taken here by the VMI volume source).
type DataVolumeImportSource struct {
	// HTTP imports an image from an HTTP or HTTPS URL.
	HTTP *DataVolumeSourceHTTP `json:"http,omitempty"`
	// S3 imports an image from an S3 bucket.
	S3 *DataVolumeSourceS3 `json:"s3,omitempty"`
	// GCS imports an image from Google Cloud Storage.
	GCS *DataVolumeSourceGCS `json:"gcs,omitempty"`
	// Registry imports a disk image from a container image.
	Registry *DataVolumeSourceRegistry `json:"registry,omitempty"`
	// PVC clones an existing claim.
	PVC *DataVolumeSourcePVC `json:"pvc,omitempty"`
	// Upload waits for an image to be uploaded.
	Upload *DataVolumeSourceUpload `json:"upload,omitempty"`
	// Blank creates an empty disk.
	Blank *DataVolumeBlankImage `json:"blank,omitempty"`
	// ImageIO imports a disk from oVirt.
	ImageIO *DataVolumeSourceImageIO `json:"imageio,omitempty"`
	// VDDK imports a disk from VMware.
	VDDK *DataVolumeSourceVDDK `json:"vddk,omitempty"`
	// Snapshot clones a volume snapshot.
	Snapshot *DataVolumeSourceSnapshot `json:"snapshot,omitempty"`
}

// DataVolumeSourceHTTP imports from an http(s) URL.
type DataVolumeSourceHTTP struct {
	// URL is the http or https address of the image.
	URL string `json:"url"`
	// SecretRef names a Secret with accessKeyId/secretKey for basic auth.
	SecretRef string `json:"secretRef,omitempty"`
	// CertConfigMap names a ConfigMap with the CA bundle of the server.
	CertConfigMap string `json:"certConfigMap,omitempty"`
	// ExtraHeaders are "Name: value" headers sent with the request.
	ExtraHeaders []string `json:"extraHeaders,omitempty"`
	// SecretExtraHeaders name Secrets holding more headers.
	SecretExtraHeaders []string `json:"secretExtraHeaders,omitempty"`
	// Checksum is "algorithm:hex" (md5, sha1, sha256, sha512) that the
	// downloaded file must match.
	Checksum string `json:"checksum,omitempty"`
}

// DataVolumeSourceS3 imports from an S3 bucket URL.
type DataVolumeSourceS3 struct {
	// URL is the object's S3 URL.
	URL string `json:"url"`
	// SecretRef names the Secret holding the access key and secret key.
	SecretRef string `json:"secretRef,omitempty"`
	// CertConfigMap names the ConfigMap holding the CA bundle to trust.
	CertConfigMap string `json:"certConfigMap,omitempty"`
}

// DataVolumeSourceGCS imports from Google Cloud Storage.
type DataVolumeSourceGCS struct {
	// URL is the object's Google Cloud Storage URL.
	URL string `json:"url"`
	// SecretRef names the Secret holding the service account key.
	SecretRef string `json:"secretRef,omitempty"`
}

// RegistryPullMethod is how a registry image is fetched.
type RegistryPullMethod string

// Pull methods.
const (
	// RegistryPullPod pulls the image layers in the importer (the default).
	RegistryPullPod RegistryPullMethod = "pod"
	// RegistryPullNode lets the node's container runtime pull the image.
	RegistryPullNode RegistryPullMethod = "node"
)

// DataVolumeSourceRegistry imports the disk under /disk/ of a container
// image.
type DataVolumeSourceRegistry struct {
	// URL is docker://registry/repository[:tag|@digest]; virtkit does not
	// support oci-archive:// URLs.
	URL *string `json:"url,omitempty"`
	// ImageStream names an OpenShift ImageStream; virtkit does not support it.
	ImageStream *string `json:"imageStream,omitempty"`
	// PullMethod is pod (the importer pulls the image) or node (the node's
	// container runtime does).
	PullMethod *RegistryPullMethod `json:"pullMethod,omitempty"`
	// SecretRef names the Secret holding the registry credentials.
	SecretRef *string `json:"secretRef,omitempty"`
	// CertConfigMap names the ConfigMap holding the CA bundle to trust.
	CertConfigMap *string `json:"certConfigMap,omitempty"`
	// Platform selects the image of a multi-architecture index.
	Platform *PlatformOptions `json:"platform,omitempty"`
}

// PlatformOptions select one image of a multi-platform index.
type PlatformOptions struct {
	// Architecture is the architecture whose image is imported, such as amd64.
	Architecture string `json:"architecture,omitempty"`
}

// DataVolumeSourcePVC clones an existing claim (another DataVolume's disk).
type DataVolumeSourcePVC struct {
	// Namespace is the source claim's namespace.
	Namespace string `json:"namespace"`
	// Name is the source claim's name.
	Name string `json:"name"`
}

// DataVolumeSourceUpload waits for a client to upload the image.
type DataVolumeSourceUpload struct{}

// DataVolumeBlankImage creates an empty disk of the requested size.
type DataVolumeBlankImage struct{}

// DataVolumeSourceImageIO imports from oVirt's imageio; NotSupported.
type DataVolumeSourceImageIO struct {
	// URL is the oVirt engine's API URL.
	URL string `json:"url"`
	// DiskID is the ID of the disk to import.
	DiskID string `json:"diskId"`
	// SecretRef names the Secret holding the engine's credentials.
	SecretRef string `json:"secretRef,omitempty"`
	// CertConfigMap names the ConfigMap holding the CA bundle to trust.
	CertConfigMap string `json:"certConfigMap,omitempty"`
	// InsecureSkipVerify skips verifying the engine's certificate.
	InsecureSkipVerify *bool `json:"insecureSkipVerify,omitempty"`
}

// DataVolumeSourceVDDK imports from VMware; NotSupported.
type DataVolumeSourceVDDK struct {
	// URL is the vCenter or ESXi URL.
	URL string `json:"url,omitempty"`
	// UUID is the UUID of the virtual machine the disk belongs to.
	UUID string `json:"uuid,omitempty"`
	// BackingFile is the path of the disk's backing file.
	BackingFile string `json:"backingFile,omitempty"`
	// Thumbprint is the server certificate's thumbprint.
	Thumbprint string `json:"thumbprint,omitempty"`
	// SecretRef names the Secret holding the credentials.
	SecretRef string `json:"secretRef,omitempty"`
	// InitImageURL is the image holding the VDDK library.
	InitImageURL string `json:"initImageURL,omitempty"`
	// ExtraArgs names a ConfigMap of extra VDDK arguments.
	ExtraArgs string `json:"extraArgs,omitempty"`
}

// DataVolumeSourceSnapshot restores a volume snapshot into the DataVolume:
// in virtkit, one a VirtualMachineSnapshot took (its content's
// volumeBackups[].volumeSnapshotName), in the DataVolume's namespace.
type DataVolumeSourceSnapshot struct {
	// Namespace is the snapshot's namespace.
	Namespace string `json:"namespace"`
	// Name is the snapshot's name.
	Name string `json:"name"`
}

// DataVolumePhase is where a DataVolume is in its life.
type DataVolumePhase string

// DataVolume phases (CDI's names).
const (
	DataVolumePhaseUnset            DataVolumePhase = ""
	DataVolumePending               DataVolumePhase = "Pending"
	DataVolumePVCBound              DataVolumePhase = "PVCBound"
	DataVolumeImportScheduled       DataVolumePhase = "ImportScheduled"
	DataVolumeImportInProgress      DataVolumePhase = "ImportInProgress"
	DataVolumeCloneScheduled        DataVolumePhase = "CloneScheduled"
	DataVolumeCloneInProgress       DataVolumePhase = "CloneInProgress"
	DataVolumeUploadScheduled       DataVolumePhase = "UploadScheduled"
	DataVolumeUploadReady           DataVolumePhase = "UploadReady"
	DataVolumeWaitForFirstConsumer  DataVolumePhase = "WaitForFirstConsumer"
	DataVolumePendingPopulation     DataVolumePhase = "PendingPopulation"
	DataVolumeExpansionInProgress   DataVolumePhase = "ExpansionInProgress"
	DataVolumePrepClaimInProgress   DataVolumePhase = "PrepClaimInProgress"
	DataVolumeSucceeded             DataVolumePhase = "Succeeded"
	DataVolumeFailed                DataVolumePhase = "Failed"
	DataVolumeUnknown               DataVolumePhase = "Unknown"
	DataVolumePaused                DataVolumePhase = "Paused"
	DataVolumeNamespaceTransferring DataVolumePhase = "NamespaceTransferInProgress"
	// Smart-clone, CSI-clone and rebind phases (never set by virtkit).
	DataVolumeSnapshotForSmartCloneInProgress   DataVolumePhase = "SnapshotForSmartCloneInProgress"
	DataVolumeCloneFromSnapshotSourceInProgress DataVolumePhase = "CloneFromSnapshotSourceInProgress"
	DataVolumeSmartClonePVCInProgress           DataVolumePhase = "SmartClonePVCInProgress"
	DataVolumeCSICloneInProgress                DataVolumePhase = "CSICloneInProgress"
	DataVolumeRebindInProgress                  DataVolumePhase = "RebindInProgress"
)

// DataVolumeProgress is the share of the transfer done, "45.20%", or
// "N/A" when the size is not known.
type DataVolumeProgress string

// DataVolumeStatus is the observed DataVolume.
type DataVolumeStatus struct {
	// ClaimName is the claim (virtkit: the provisioned volume) holding
	// the data.
	ClaimName string `json:"claimName,omitempty"`
	// Phase is where the import stands, such as ImportInProgress, Succeeded or
	// Failed.
	Phase DataVolumePhase `json:"phase,omitempty"`
	// Progress is the import's progress, as a percentage.
	Progress DataVolumeProgress `json:"progress,omitempty"`
	// RestartCount counts the restarts of the import.
	RestartCount int32 `json:"restartCount,omitempty"`
	// Conditions are the data volume's current conditions.
	Conditions []DataVolumeCondition `json:"conditions,omitempty"`
}

// DataVolumeConditionType is one of Bound, Ready, Running.
type DataVolumeConditionType string

// DataVolume condition types.
const (
	DataVolumeBound   DataVolumeConditionType = "Bound"
	DataVolumeReady   DataVolumeConditionType = "Ready"
	DataVolumeRunning DataVolumeConditionType = "Running"
)

// DataVolumeCondition is one observed aspect of a DataVolume.
type DataVolumeCondition struct {
	// Type is the kind of condition: Ready, Bound or Running.
	Type DataVolumeConditionType `json:"type"`
	// Status is True, False or Unknown.
	Status ConditionStatus `json:"status"`
	// LastTransitionTime is when the status last changed.
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// LastHeartbeatTime is when the condition was last updated.
	LastHeartbeatTime metav1.Time `json:"lastHeartbeatTime,omitempty"`
	// Reason is a one-word cause of the last transition.
	Reason string `json:"reason,omitempty"`
	// Message is a human readable account of the last transition.
	Message string `json:"message,omitempty"`
}

// DataVolume condition reasons, as CDI sets them.
const (
	// Bound reasons.
	DataVolumeReasonBound     = "Bound"
	DataVolumeReasonPending   = "Pending"
	DataVolumeReasonClaimLost = "ClaimLost"
	DataVolumeReasonNotFound  = "NotFound"
	// Running reasons (from the importer's termination).
	DataVolumeReasonCompleted         = "Completed"
	DataVolumeReasonError             = "Error"
	DataVolumeReasonImportRunning     = "Pod is running"
	DataVolumeReasonCrashLoopBackOff  = "CrashLoopBackOff"
	DataVolumeReasonTransferScheduled = "ImportScheduled"
	// Ready reasons.
	DataVolumeReasonTransferRunning = "TransferRunning"
	DataVolumeReasonTransferFailed  = "TransferFailed"
)

// ProgressNotAvailable is status.progress when the size is unknown.
const ProgressNotAvailable DataVolumeProgress = "N/A"

// Condition returns the condition of type t, nil if absent.
func (s *DataVolumeStatus) Condition(t DataVolumeConditionType) *DataVolumeCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// SetCondition adds or replaces the condition of c.Type; the transition
// time moves (to now) only when the status changes. It reports whether
// anything changed.
func (s *DataVolumeStatus) SetCondition(c DataVolumeCondition, now metav1.Time) bool {
	old := s.Condition(c.Type)
	if old == nil {
		c.LastTransitionTime, c.LastHeartbeatTime = now, now
		s.Conditions = append(s.Conditions, c)
		return true
	}
	if old.Status == c.Status && old.Reason == c.Reason && old.Message == c.Message {
		return false
	}
	if old.Status != c.Status {
		old.LastTransitionTime = now
	}
	old.Status, old.Reason, old.Message, old.LastHeartbeatTime = c.Status, c.Reason, c.Message, now
	return true
}

// IsFinal reports whether the phase is Succeeded or Failed.
func (p DataVolumePhase) IsFinal() bool { return p == DataVolumeSucceeded || p == DataVolumeFailed }

// DataVolumeForTemplate returns the DataVolume a VM's dataVolumeTemplate
// creates: the template's metadata and spec in the VM's namespace, owned by
// the VM (controller owner reference, blockOwnerDeletion).
func DataVolumeForTemplate(vm *VirtualMachine, t *DataVolumeTemplateSpec) *DataVolume {
	dv := &DataVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: CDISchemeGroupVersion.String(), Kind: KindDataVolume},
		ObjectMeta: *t.ObjectMeta.DeepCopy(),
		Spec:       *t.Spec.DeepCopy(),
	}
	dv.Namespace = vm.Namespace
	dv.OwnerReferences = append(dv.OwnerReferences, *metav1.NewControllerRef(vm, SchemeGroupVersion.WithKind(KindVirtualMachine)))
	return dv
}

// Annotations by which virtkit's DataVolume controller, import workers and
// VMI placement coordinate.
const (
	// DataVolumeImportNodeAnnotation names the node whose import worker
	// fills the DataVolume (set by the DataVolume controller).
	DataVolumeImportNodeAnnotation = "virtkit.io/import-node"
	// DataVolumeVolumeNodeAnnotation names the node holding the filled
	// disk when its storage class is node-local; VMIs using the
	// DataVolume are placed there. Absent for shared classes.
	DataVolumeVolumeNodeAnnotation = "virtkit.io/volume-node"
	// DataVolumeStorageClassAnnotation is the storage class that holds the
	// disk (set by the import worker).
	DataVolumeStorageClassAnnotation = "virtkit.io/storage-class"
)

// FormatDataVolumeProgress renders a percentage as CDI does ("45.20%").
func FormatDataVolumeProgress(percent float64) DataVolumeProgress {
	percent = min(max(percent, 0), 100)
	return DataVolumeProgress(strconv.FormatFloat(percent, 'f', 2, 64) + "%")
}

// keepDataVolumeAnnotations carries the import state virtkit keeps in a
// DataVolume's annotations (node, storage class) across an update that
// does not name them, as the status is carried.
func keepDataVolumeAnnotations(dv, old *DataVolume) {
	for _, k := range []string{DataVolumeImportNodeAnnotation, DataVolumeVolumeNodeAnnotation, DataVolumeStorageClassAnnotation} {
		v, ok := old.Annotations[k]
		if _, set := dv.Annotations[k]; !ok || set {
			continue
		}
		if dv.Annotations == nil {
			dv.Annotations = map[string]string{}
		}
		dv.Annotations[k] = v
	}
}
