package corev1

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// newClaimREST serves persistentvolumeclaims as virtkit's storage layer
// models them: one claim per DataVolume, of its name, as CDI creates it.
// The claim's spec is the DataVolume's pvc (or storage) spec; it is Bound,
// with the requested size as capacity, once the DataVolume's Bound
// condition is True, else Pending. Claims are read-only: create, update
// and delete are not served (405); write the DataVolume instead.
func newClaimREST(st store.Store, clk clock.PassiveClock) *view {
	v := &view{
		st: st, resource: "persistentvolumeclaims", singular: "persistentvolumeclaim", shortNames: []string{"pvc"}, namespaced: true,
		newObj:        func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		newList:       func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		newSource:     func() virtkit.Object { return &virtkit.DataVolume{} },
		newSourceList: func() virtkit.ObjectList { return &virtkit.DataVolumeList{} },
		convert:       func(o virtkit.Object) runtime.Object { return Claim(o.(*virtkit.DataVolume)) },
		fields: func(obj runtime.Object) fields.Set {
			return fields.Set{"status.phase": string(obj.(*corev1.PersistentVolumeClaim).Status.Phase)}
		},
		TableConvertor: table{clock: clk, columns: []column{nameColumn(),
			{def: metav1.TableColumnDefinition{Name: "Status", Type: "string"}, cell: func(obj runtime.Object, _ time.Time) any {
				return string(obj.(*corev1.PersistentVolumeClaim).Status.Phase)
			}},
			{def: metav1.TableColumnDefinition{Name: "Volume", Type: "string"}, cell: func(obj runtime.Object, _ time.Time) any {
				return obj.(*corev1.PersistentVolumeClaim).Spec.VolumeName
			}},
			{def: metav1.TableColumnDefinition{Name: "Capacity", Type: "string"}, cell: func(obj runtime.Object, _ time.Time) any {
				q, ok := obj.(*corev1.PersistentVolumeClaim).Status.Capacity[corev1.ResourceStorage]
				if !ok {
					return ""
				}
				return q.String()
			}},
			{def: metav1.TableColumnDefinition{Name: "Access Modes", Type: "string"}, cell: func(obj runtime.Object, _ time.Time) any {
				var modes []string
				for _, m := range obj.(*corev1.PersistentVolumeClaim).Status.AccessModes {
					modes = append(modes, accessModeShort(m))
				}
				return strings.Join(modes, ",")
			}},
			{def: metav1.TableColumnDefinition{Name: "StorageClass", Type: "string"}, cell: func(obj runtime.Object, _ time.Time) any {
				if sc := obj.(*corev1.PersistentVolumeClaim).Spec.StorageClassName; sc != nil {
					return *sc
				}
				return ""
			}},
			ageColumn(),
		}},
	}
	return v.withHistory(st)
}

func accessModeShort(m corev1.PersistentVolumeAccessMode) string {
	switch m {
	case corev1.ReadWriteOnce:
		return "RWO"
	case corev1.ReadOnlyMany:
		return "ROX"
	case corev1.ReadWriteMany:
		return "RWX"
	case corev1.ReadWriteOncePod:
		return "RWOP"
	}
	return string(m)
}

// Claim is the PersistentVolumeClaim of a DataVolume.
func Claim(dv *virtkit.DataVolume) *corev1.PersistentVolumeClaim {
	out := &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{
			Name: dv.Name, Namespace: dv.Namespace, UID: dv.UID, ResourceVersion: dv.ResourceVersion,
			CreationTimestamp: dv.CreationTimestamp, DeletionTimestamp: dv.DeletionTimestamp.DeepCopy(),
			Labels: dv.Labels, Annotations: map[string]string{"cdi.kubevirt.io/ownedByDataVolume": dv.Namespace + "/" + dv.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: virtkit.CDISchemeGroupVersion.String(), Kind: virtkit.KindDataVolume,
				Name: dv.Name, UID: dv.UID, Controller: new(true), BlockOwnerDeletion: new(true)}},
		},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
	}
	cdiClaimAnnotations(dv, out.Annotations)
	spec := dv.Spec.PVC
	if spec == nil {
		spec = dv.Spec.Storage
	}
	if spec != nil {
		// virtkit's claim spec has the core type's JSON form.
		if b, err := json.Marshal(spec); err == nil {
			_ = json.Unmarshal(b, &out.Spec)
		}
	}
	for _, c := range dv.Status.Conditions {
		if c.Type == virtkit.DataVolumeBound && c.Status == virtkit.ConditionTrue {
			out.Status.Phase = corev1.ClaimBound
			out.Status.AccessModes = out.Spec.AccessModes
			if q, ok := out.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				out.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: q}
			}
			if out.Spec.VolumeName == "" {
				out.Spec.VolumeName = fmt.Sprintf("pvc-%s", dv.UID)
			}
		}
	}
	return out
}
