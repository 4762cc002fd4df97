package openapi_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/virtkit/virtkit"
)

// coreKinds are the Kubernetes kinds the API server serves besides
// virtkit's KnownKinds.
var coreKinds = []struct {
	gvk  schema.GroupVersionKind
	obj  runtime.Object
	list runtime.Object
}{
	{corev1.SchemeGroupVersion.WithKind("Namespace"), &corev1.Namespace{}, &corev1.NamespaceList{}},
	{corev1.SchemeGroupVersion.WithKind("ConfigMap"), &corev1.ConfigMap{}, &corev1.ConfigMapList{}},
	{corev1.SchemeGroupVersion.WithKind("Secret"), &corev1.Secret{}, &corev1.SecretList{}},
	{corev1.SchemeGroupVersion.WithKind("ServiceAccount"), &corev1.ServiceAccount{}, &corev1.ServiceAccountList{}},
	{corev1.SchemeGroupVersion.WithKind("Node"), &corev1.Node{}, &corev1.NodeList{}},
	{corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), &corev1.PersistentVolumeClaim{}, &corev1.PersistentVolumeClaimList{}},
	{corev1.SchemeGroupVersion.WithKind("Event"), &corev1.Event{}, &corev1.EventList{}},
	{autoscalingv1.SchemeGroupVersion.WithKind("Scale"), &autoscalingv1.Scale{}, nil},
	{authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"), &authorizationv1.SubjectAccessReview{}, nil},
	{authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview"), &authorizationv1.SelfSubjectAccessReview{}, nil},
	{authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectRulesReview"), &authorizationv1.SelfSubjectRulesReview{}, nil},
	{authenticationv1.SchemeGroupVersion.WithKind("TokenReview"), &authenticationv1.TokenReview{}, nil},
	{authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview"), &authenticationv1.SelfSubjectReview{}, nil},
}

// servedKind is one kind of the test scheme with a sample object whose
// TypeMeta is set.
type servedKind struct {
	gvk schema.GroupVersionKind
	obj runtime.Object
}

// newScheme registers what the API server serves: every virtkit kind
// (and its list) and coreKinds, with the meta types of each group version.
func newScheme(t *testing.T) (*runtime.Scheme, []servedKind) {
	t.Helper()
	s := runtime.NewScheme()
	var kinds []servedKind
	gvs := map[schema.GroupVersion]bool{}
	for _, gvk := range virtkit.KnownKinds() {
		obj, err := virtkit.NewObject(gvk)
		require.NoError(t, err)
		list, err := virtkit.NewObjectList(gvk)
		require.NoError(t, err)
		s.AddKnownTypeWithName(gvk, obj.DeepCopyObject())
		s.AddKnownTypeWithName(gvk.GroupVersion().WithKind(gvk.Kind+"List"), list)
		kinds = append(kinds, servedKind{gvk, obj})
		gvs[gvk.GroupVersion()] = true
	}
	for _, k := range coreKinds {
		if s.Recognizes(k.gvk) {
			continue
		}
		s.AddKnownTypeWithName(k.gvk, k.obj)
		if k.list != nil {
			s.AddKnownTypeWithName(k.gvk.GroupVersion().WithKind(k.gvk.Kind+"List"), k.list)
		}
		obj := k.obj.DeepCopyObject()
		obj.GetObjectKind().SetGroupVersionKind(k.gvk)
		kinds = append(kinds, servedKind{k.gvk, obj})
		gvs[k.gvk.GroupVersion()] = true
	}
	for gv := range gvs {
		metav1.AddToGroupVersion(s, gv)
	}
	require.NoError(t, metav1.AddMetaToScheme(s))
	return s, kinds
}
