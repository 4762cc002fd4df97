package corev1

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/virtkit/virtkit"
)

// Annotations CDI keeps on a DataVolume's claim, which virtctl
// image-upload reads: the claim takes uploads, and the phase and
// readiness of the pod filling it (virtkit has no pod: the phase follows
// the DataVolume's).
const (
	AnnUploadTarget = "cdi.kubevirt.io/storage.upload.target"
	AnnPodPhase     = "cdi.kubevirt.io/storage.pod.phase"
	AnnPodReady     = "cdi.kubevirt.io/storage.pod.ready"
	AnnContentType  = "cdi.kubevirt.io/storage.contentType"
)

// cdiClaimAnnotations adds CDI's annotations of dv's claim to ann.
func cdiClaimAnnotations(dv *virtkit.DataVolume, ann map[string]string) {
	if dv.Spec.Source != nil && dv.Spec.Source.Upload != nil {
		ann[AnnUploadTarget] = ""
		ct := dv.Spec.ContentType
		if ct == "" {
			ct = virtkit.DataVolumeKubeVirt
		}
		ann[AnnContentType] = string(ct)
	}
	var phase corev1.PodPhase
	switch dv.Status.Phase {
	case virtkit.DataVolumeImportScheduled, virtkit.DataVolumeCloneScheduled, virtkit.DataVolumeUploadScheduled:
		phase = corev1.PodPending
	case virtkit.DataVolumeImportInProgress, virtkit.DataVolumeCloneInProgress, virtkit.DataVolumeCloneFromSnapshotSourceInProgress, virtkit.DataVolumeUploadReady:
		phase = corev1.PodRunning
	case virtkit.DataVolumeSucceeded:
		phase = corev1.PodSucceeded
	case virtkit.DataVolumeFailed:
		phase = corev1.PodFailed
	default:
		return
	}
	ann[AnnPodPhase] = string(phase)
	ann[AnnPodReady] = strconv.FormatBool(phase == corev1.PodRunning)
}
