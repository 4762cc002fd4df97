package corev1

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/virtkit/virtkit"
)

// claimREST is the claims view, which also creates the claims virtctl
// image-upload pvc creates: a claim annotated
// cdi.kubevirt.io/storage.upload.target becomes a DataVolume of its name
// with an upload source and the claim's spec as its storage, whose claim
// the view then shows (CDI's upload controller serves such claims).
// Other claims cannot be created: virtkit provisions claims through
// DataVolumes.
type claimREST struct {
	*view
}

var _ rest.Creater = (*claimREST)(nil)

// Create implements rest.Creater.
func (c *claimREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a PersistentVolumeClaim: %T", obj))
	}
	gk := schema.GroupKind{Kind: "PersistentVolumeClaim"}
	if _, upload := pvc.Annotations[AnnUploadTarget]; !upload {
		e := field.NotSupported[string](field.NewPath("metadata", "annotations").Key(AnnUploadTarget), "", nil)
		e.Detail = "only upload claims (annotated " + AnnUploadTarget + ") can be created; create a DataVolume for any other claim"
		return nil, apierrors.NewInvalid(gk, pvc.Name, field.ErrorList{e})
	}
	if createValidation != nil {
		if err := createValidation(ctx, pvc); err != nil {
			return nil, err
		}
	}
	ns := c.namespace(ctx)
	dv := &virtkit.DataVolume{
		TypeMeta: metav1.TypeMeta{APIVersion: virtkit.CDISchemeGroupVersion.String(), Kind: virtkit.KindDataVolume},
		ObjectMeta: metav1.ObjectMeta{Name: pvc.Name, GenerateName: pvc.GenerateName, Namespace: ns,
			Labels: pvc.Labels, Annotations: map[string]string{}},
		Spec: virtkit.DataVolumeSpec{Source: &virtkit.DataVolumeImportSource{Upload: &virtkit.DataVolumeSourceUpload{}},
			Storage: &virtkit.PersistentVolumeClaimSpec{}},
	}
	for k, v := range pvc.Annotations {
		if k != AnnUploadTarget && k != AnnContentType {
			dv.Annotations[k] = v
		}
	}
	if ct := pvc.Annotations[AnnContentType]; ct != "" {
		dv.Spec.ContentType = virtkit.DataVolumeContentType(ct)
	}
	// virtkit's claim spec has the core type's JSON form.
	b, err := json.Marshal(pvc.Spec)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, dv.Spec.Storage); err != nil {
		return nil, apierrors.NewBadRequest("spec: " + err.Error())
	}
	virtkit.SetDataVolumeDefaults(dv)
	if errs := virtkit.Validate(dv); len(errs) > 0 {
		for _, e := range errs {
			if fp, ok := trimPrefix(e.Field, "spec.storage"); ok {
				e.Field = "spec" + fp
			}
		}
		return nil, apierrors.NewInvalid(gk, pvc.Name, errs)
	}
	if err := c.st.Create(ctx, dv); err != nil {
		return nil, apiError(err, c.groupResource(), pvc.Name)
	}
	return Claim(dv), nil
}

func trimPrefix(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):], true
	}
	return "", false
}
