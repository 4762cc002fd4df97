package metrics

import (
	"context"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// snapshotFamilies are virt-controller's snapshot and restore families.
// KubeVirt records kubevirt_vmsnapshot_persistentvolumeclaim_labels and the
// two disks_restored_from_source families as Prometheus rules over
// kube-state-metrics' claim labels; virtkit has no kube-state-metrics, so
// the collector serves the rules' results from the restored DataVolumes
// (labelled restore.kubevirt.io/source-vm-name and -namespace, as KubeVirt
// labels the claims it restores).
type snapshotFamilies struct {
	succeeded, info, created        *family
	pvcLabels, restored, restoredBy *family
	restoreInfo                     *family
}

func newSnapshotFamilies() snapshotFamilies {
	return snapshotFamilies{
		succeeded: newFamily("kubevirt_vmsnapshot_succeeded_timestamp_seconds",
			"Returns the timestamp of successful virtual machine snapshot.", gauge, "name", "snapshot_name", "namespace"),
		info: newFamily("kubevirt_vmsnapshot_info", "Information about VirtualMachineSnapshots.", gauge,
			"namespace", "name", "uid", "vm", "phase", "ready_to_use"),
		created: newFamily("kubevirt_vmsnapshot_create_date_timestamp_seconds",
			"Virtual Machine Snapshot creation timestamp.", gauge, "name", "namespace"),
		pvcLabels: newFamily("kubevirt_vmsnapshot_persistentvolumeclaim_labels",
			"Returns the labels of the persistent volume claims that are used for restoring virtual machines.", gauge,
			"namespace", "persistentvolumeclaim", "label_restore_kubevirt_io_source_vm_name",
			"label_restore_kubevirt_io_source_vm_namespace", "vm_name", "vm_namespace"),
		restored: newFamily("kubevirt_vmsnapshot_disks_restored_from_source",
			"Returns the total number of virtual machine disks restored from the source virtual machine.", gauge,
			"vm_name", "vm_namespace"),
		restoredBy: newFamily("kubevirt_vmsnapshot_disks_restored_from_source_bytes",
			"Returns the amount of space in bytes restored from the source virtual machine.", gauge,
			"vm_name", "vm_namespace"),
		restoreInfo: newFamily("kubevirt_vmrestore_info", "Information about VirtualMachineRestores.", gauge,
			"namespace", "name", "uid", "vm", "snapshot_name", "complete", "failure"),
	}
}

// collectSnapshots lists snapshots, restores and (unless dvsListed) the
// DataVolumes into dvs, and sends the
// snapshot and restore families. A store that cannot list a kind leaves its families
// out: the rest of the scrape goes on.
func (c *ControlPlaneCollector) collectSnapshots(ctx context.Context, ch chan<- prometheus.Metric, dvs *virtkit.DataVolumeList, dvsListed bool) {
	f := &c.f.snap
	var snaps virtkit.VirtualMachineSnapshotList
	if err := c.src.Objects.List(ctx, &snaps, store.ListOptions{}); err != nil {
		c.log.Debug("metrics: listing VirtualMachineSnapshots", "error", err)
	}
	for i := range snaps.Items {
		s := &snaps.Items[i]
		phase, ready := "<none>", false
		if st := s.Status; st != nil {
			phase = strings.ToLower(string(st.Phase))
			ready = st.ReadyToUse != nil && *st.ReadyToUse
			if st.Phase == virtkit.SnapshotSucceeded && st.CreationTime != nil {
				send(ch, f.succeeded, float64(st.CreationTime.Unix()), s.Spec.Source.Name, s.Name, s.Namespace)
			}
		}
		send(ch, f.info, 1, s.Namespace, s.Name, string(s.UID), s.Spec.Source.Name, phase, strconv.FormatBool(ready))
		if !s.CreationTimestamp.IsZero() {
			send(ch, f.created, float64(s.CreationTimestamp.Unix()), s.Name, s.Namespace)
		}
	}
	var restores virtkit.VirtualMachineRestoreList
	if err := c.src.Objects.List(ctx, &restores, store.ListOptions{}); err != nil {
		c.log.Debug("metrics: listing VirtualMachineRestores", "error", err)
	}
	for i := range restores.Items {
		r := &restores.Items[i]
		complete, failed := false, false
		if st := r.Status; st != nil {
			complete = st.Complete != nil && *st.Complete
			for _, cond := range st.Conditions {
				if cond.Type == virtkit.ConditionFailure && cond.Status == virtkit.ConditionTrue {
					failed = true
				}
			}
		}
		send(ch, f.restoreInfo, 1, r.Namespace, r.Name, string(r.UID), r.Spec.Target.Name,
			r.Spec.VirtualMachineSnapshotName, strconv.FormatBool(complete), strconv.FormatBool(failed))
	}
	if !dvsListed {
		// Only the restored ones: a selector on the restore label keeps a
		// fleet's other DataVolumes out of the scrape.
		sel := labels.NewSelector()
		if req, err := labels.NewRequirement(virtkit.RestoreSourceVMNameLabel, selection.Exists, nil); err == nil {
			sel = sel.Add(*req)
		}
		if err := c.src.Objects.List(ctx, dvs, store.ListOptions{LabelSelector: sel}); err != nil {
			c.log.Debug("metrics: listing DataVolumes", "error", err)
		}
	}
	type vmKey struct{ name, namespace string }
	count := map[vmKey]float64{}
	bytes := map[vmKey]float64{}
	var order []vmKey
	for i := range dvs.Items {
		dv := &dvs.Items[i]
		name, ns := dv.Labels[virtkit.RestoreSourceVMNameLabel], dv.Labels[virtkit.RestoreSourceVMNamespaceLabel]
		if name == "" || ns == "" {
			continue
		}
		send(ch, f.pvcLabels, 1, dv.Namespace, dv.Name, name, ns, name, ns)
		k := vmKey{name, ns}
		if _, seen := count[k]; !seen {
			order = append(order, k)
		}
		count[k]++
		bytes[k] += float64(requestedStorage(dv))
	}
	for _, k := range order {
		send(ch, f.restored, count[k], k.name, k.namespace)
		send(ch, f.restoredBy, bytes[k], k.name, k.namespace)
	}
}

// requestedStorage is a DataVolume's requested size in bytes, 0 when it
// requests none.
func requestedStorage(dv *virtkit.DataVolume) int64 {
	for _, spec := range []*virtkit.PersistentVolumeClaimSpec{dv.Spec.Storage, dv.Spec.PVC} {
		if spec == nil {
			continue
		}
		if q, ok := spec.Resources.Requests[virtkit.ResourceStorage]; ok {
			return q.Value()
		}
	}
	return 0
}
