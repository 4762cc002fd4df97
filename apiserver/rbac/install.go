package rbac

import (
	"fmt"
	"reflect"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kube-openapi/pkg/common"
	openapiutil "k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// NewScheme returns a scheme of the review types: authorization.k8s.io/v1
// and authentication.k8s.io/v1, each also under the internal version (the
// same Go types, so there is nothing to convert), and meta/v1's options
// and unversioned types the generic API server needs.
func NewScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := authorizationv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("rbac: scheme: %w", err)
	}
	if err := authenticationv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("rbac: scheme: %w", err)
	}
	s.AddKnownTypes(schema.GroupVersion{Group: authorizationv1.GroupName, Version: runtime.APIVersionInternal},
		&authorizationv1.SelfSubjectAccessReview{}, &authorizationv1.SelfSubjectRulesReview{})
	s.AddKnownTypes(schema.GroupVersion{Group: authenticationv1.GroupName, Version: runtime.APIVersionInternal},
		&authenticationv1.SelfSubjectReview{})
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(metav1.Unversioned, &metav1.Status{}, &metav1.APIVersions{},
		&metav1.APIGroupList{}, &metav1.APIGroup{}, &metav1.APIResourceList{})
	for _, gv := range []schema.GroupVersion{authorizationv1.SchemeGroupVersion, authenticationv1.SchemeGroupVersion} {
		if err := s.SetVersionPriority(gv); err != nil {
			return nil, fmt.Errorf("rbac: scheme: %w", err)
		}
	}
	return s, nil
}

// AuthorizationAPIGroupInfo returns authorization.k8s.io/v1 with
// selfsubjectaccessreviews (asking authz, usually the server's whole
// authorizer chain) and selfsubjectrulesreviews (asking resolver, usually
// the [Authorizer]), for GenericAPIServer.InstallAPIGroup. scheme is one
// from [NewScheme].
func AuthorizationAPIGroupInfo(scheme *runtime.Scheme, authz authorizer.Authorizer, resolver authorizer.RuleResolver) genericapiserver.APIGroupInfo {
	info := genericapiserver.NewDefaultAPIGroupInfo(authorizationv1.GroupName, scheme, runtime.NewParameterCodec(scheme), serializer.NewCodecFactory(scheme))
	info.VersionedResourcesStorageMap[authorizationv1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"selfsubjectaccessreviews": NewSelfSubjectAccessReviewREST(authz),
		"selfsubjectrulesreviews":  NewSelfSubjectRulesReviewREST(resolver),
	}
	return info
}

// AuthenticationAPIGroupInfo returns authentication.k8s.io/v1 with
// selfsubjectreviews, for GenericAPIServer.InstallAPIGroup. scheme is one
// from [NewScheme].
func AuthenticationAPIGroupInfo(scheme *runtime.Scheme) genericapiserver.APIGroupInfo {
	info := genericapiserver.NewDefaultAPIGroupInfo(authenticationv1.GroupName, scheme, runtime.NewParameterCodec(scheme), serializer.NewCodecFactory(scheme))
	info.VersionedResourcesStorageMap[authenticationv1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"selfsubjectreviews": NewSelfSubjectReviewREST(),
	}
	return info
}

// Install installs both review groups on s: [AuthorizationAPIGroupInfo]
// with authz and resolver, and [AuthenticationAPIGroupInfo]. The server's
// OpenAPI v3 configuration must know the review types: include
// [OpenAPIDefinitions] in its GetDefinitions.
func Install(s *genericapiserver.GenericAPIServer, authz authorizer.Authorizer, resolver authorizer.RuleResolver) error {
	scheme, err := NewScheme()
	if err != nil {
		return err
	}
	authzInfo := AuthorizationAPIGroupInfo(scheme, authz, resolver)
	authnInfo := AuthenticationAPIGroupInfo(scheme)
	if err := s.InstallAPIGroups(&authzInfo, &authnInfo); err != nil {
		return fmt.Errorf("rbac: install review APIs: %w", err)
	}
	return nil
}

// OpenAPIDefinitions returns OpenAPI definitions of the review types, by
// their canonical model names (io.k8s.api.authorization.v1.…): each
// an object with apiVersion, kind, metadata, spec and status, the last
// three objects whose fields are kept as sent. That is what the generic
// API server needs to install the review groups (its field manager builds
// on them); merge them into the server's own definitions.
func OpenAPIDefinitions(common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	out := map[string]common.OpenAPIDefinition{}
	for _, obj := range []runtime.Object{
		&authorizationv1.SelfSubjectAccessReview{}, &authorizationv1.SelfSubjectRulesReview{},
		&authenticationv1.SelfSubjectReview{},
	} {
		out[openapiutil.GetCanonicalTypeName(obj)] = reviewDefinition(reflect.TypeOf(obj).Elem().Name())
	}
	return out
}

func reviewDefinition(kind string) common.OpenAPIDefinition {
	str := func(desc string) spec.Schema {
		return spec.Schema{SchemaProps: spec.SchemaProps{Type: []string{"string"}, Description: desc}}
	}
	obj := func(desc string) spec.Schema {
		return spec.Schema{
			SchemaProps:      spec.SchemaProps{Type: []string{"object"}, Description: desc},
			VendorExtensible: spec.VendorExtensible{Extensions: spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}},
		}
	}
	return common.OpenAPIDefinition{Schema: spec.Schema{SchemaProps: spec.SchemaProps{
		Type:        []string{"object"},
		Description: kind + " is a review of the requesting user: its spec is the question, its status the answer.",
		Properties: map[string]spec.Schema{
			"apiVersion": str("APIVersion defines the versioned schema of this representation of an object."),
			"kind":       str("Kind is a string value representing the REST resource this object represents."),
			"metadata":   obj("Standard object metadata."),
			"spec":       obj("The question."),
			"status":     obj("The answer, set by the server."),
		},
	}}}
}
