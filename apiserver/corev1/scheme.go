package corev1

import (
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the legacy core group's only version, served under /api/v1.
var GroupVersion = schema.GroupVersion{Version: "v1"}

// internalVersion is the group's internal version. This package has no
// internal types: the v1 types are registered under the internal version
// too, so the library's hub conversions are copies.
var internalVersion = schema.GroupVersion{Version: runtime.APIVersionInternal}

// servedTypes are the object and list types of the resources this package
// serves.
func servedTypes() []runtime.Object {
	return []runtime.Object{
		&corev1.Namespace{}, &corev1.NamespaceList{},
		&corev1.ConfigMap{}, &corev1.ConfigMapList{},
		&corev1.Secret{}, &corev1.SecretList{},
		&corev1.ServiceAccount{}, &corev1.ServiceAccountList{},
		&corev1.Node{}, &corev1.NodeList{},
		&corev1.Pod{}, &corev1.PodList{},
		&corev1.PersistentVolumeClaim{}, &corev1.PersistentVolumeClaimList{},
		&corev1.Event{}, &corev1.EventList{},
	}
}

// NewScheme returns a scheme with the core v1 types this package serves
// (also as their own internal version), the meta types of /api/v1 and the
// field selectors kube-apiserver accepts for them.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		return nil, err
	}
	s.AddKnownTypes(internalVersion, servedTypes()...)
	// pods/eviction takes policy/v1 Evictions, as kube-apiserver serves it.
	s.AddKnownTypes(policyv1.SchemeGroupVersion, &policyv1.Eviction{})
	s.AddKnownTypes(schema.GroupVersion{Group: policyv1.GroupName, Version: runtime.APIVersionInternal}, &policyv1.Eviction{})
	for kind, labels := range selectableFields() {
		allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true}
		for _, l := range labels {
			allowed[l] = true
		}
		err := s.AddFieldLabelConversionFunc(GroupVersion.WithKind(kind), func(label, value string) (string, string, error) {
			if !allowed[label] {
				return "", "", errFieldLabel(kind, label)
			}
			return label, value, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// selectableFields are the field selectors of each kind besides
// metadata.name and metadata.namespace, as kube-apiserver has them.
func selectableFields() map[string][]string {
	return map[string][]string{
		"Namespace":             {"status.phase"},
		"ConfigMap":             nil,
		"Secret":                {"type"},
		"ServiceAccount":        nil,
		"Node":                  {"spec.unschedulable"},
		"Pod":                   {"spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP", "status.podIPs", "status.nominatedNodeName"},
		"PersistentVolumeClaim": {"status.phase"},
		"Event": {"involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
			"involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
			"reason", "reportingComponent", "source", "type"},
	}
}
