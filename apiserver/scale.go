package apiserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
)

// hasScale reports whether a resource has the scale subresource (an
// autoscaling/v1 Scale over spec.replicas), as KubeVirt's
// VirtualMachineInstanceReplicaSet CRD declares.
func hasScale(res *resource) bool {
	return res.gvk.Kind == virtkit.KindVirtualMachineInstanceReplicaSet
}

// scaleResource is the discovery entry of a resource's scale subresource
// (kubectl scale looks it up).
func scaleResource(res *resource) metav1.APIResource {
	return metav1.APIResource{
		Name: res.plural + "/scale", Namespaced: res.namespaced, Group: "autoscaling", Version: "v1", Kind: "Scale",
		Verbs: metav1.Verbs{"get", "patch", "update"},
	}
}

// serveScale answers get, update and patch of .../NAME/scale.
func (s *Server) serveScale(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	cur := &virtkit.VirtualMachineInstanceReplicaSet{}
	if err := s.opts.Store.Get(r.Context(), s.key(info), cur); err != nil {
		s.writeError(w, r, storeError(info.res, info.name, err))
		return
	}
	scale := scaleOf(cur)
	if info.verb == "get" {
		s.writeJSONValue(w, http.StatusOK, scale)
		return
	}
	body, err := s.readBody(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var given autoscalingv1.Scale
	switch info.verb {
	case "update":
		err = json.Unmarshal(body, &given)
	case "patch":
		err = patchScale(r, info, scale, body, s.opts.MaxRequestBytes, &given)
	default:
		s.writeError(w, r, apierrors.NewMethodNotSupported(info.res.groupResource(), info.verb+" of scale"))
		return
	}
	if err != nil {
		if _, ok := err.(apierrors.APIStatus); !ok {
			err = apierrors.NewBadRequest("scale: " + err.Error())
		}
		s.writeError(w, r, err)
		return
	}
	if given.Spec.Replicas < 0 {
		s.writeError(w, r, invalid(info.res, info.name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "replicas"), given.Spec.Replicas, "must be greater than or equal to 0")}))
		return
	}
	next := cur.DeepCopy()
	replicas := given.Spec.Replicas
	next.Spec.Replicas = &replicas
	if rv := given.ResourceVersion; rv != "" && info.verb == "update" {
		next.ResourceVersion = rv
	}
	wi := *info
	wi.subresource, wi.verb = "", "update"
	out, err := s.write(r, &wi, next, cur)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSONValue(w, http.StatusOK, scaleOf(out.(*virtkit.VirtualMachineInstanceReplicaSet)))
}

// patchScale applies a merge or JSON patch to the Scale of the object.
func patchScale(r *http.Request, info *requestInfo, scale *autoscalingv1.Scale, patch []byte, maxBytes int64, out *autoscalingv1.Scale) error {
	cur, err := json.Marshal(scale)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	var patched []byte
	switch types.PatchType(strings.TrimSpace(ct)) {
	case types.MergePatchType:
		patched, err = jsonpatch.MergePatch(cur, patch)
	case types.JSONPatchType:
		patched, err = applyJSONPatch(cur, patch, maxBytes)
	case types.StrategicMergePatchType:
		return strategicMergeError(info)
	default:
		return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", info.res.groupResource(), info.name,
			fmt.Sprintf("patch type %q not supported: use %s or %s", ct, types.MergePatchType, types.JSONPatchType), 0, false)
	}
	if err != nil {
		return err
	}
	return json.Unmarshal(patched, out)
}

func scaleOf(rs *virtkit.VirtualMachineInstanceReplicaSet) *autoscalingv1.Scale {
	var want int32 = 1
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	selector := rs.Status.LabelSelector
	if selector == "" && rs.Spec.Selector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector); err == nil {
			selector = sel.String()
		}
	}
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{APIVersion: "autoscaling/v1", Kind: "Scale"},
		ObjectMeta: metav1.ObjectMeta{
			Name: rs.Name, Namespace: rs.Namespace, UID: rs.UID, ResourceVersion: rs.ResourceVersion,
			CreationTimestamp: rs.CreationTimestamp,
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: want},
		Status: autoscalingv1.ScaleStatus{Replicas: rs.Status.Replicas, Selector: selector},
	}
}
