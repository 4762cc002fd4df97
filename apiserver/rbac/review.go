package rbac

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// SelfSubjectAccessReviewREST is the storage of authorization.k8s.io/v1
// selfsubjectaccessreviews: create asks the authorizer whether the
// requesting user may do what the spec names and returns the review with
// its status (allowed, denied, reason, evaluationError). kubectl auth
// can-i uses it. Field and label selectors of the spec are not evaluated
// (RBAC ignores them).
type SelfSubjectAccessReviewREST struct {
	authz authorizer.Authorizer
}

// NewSelfSubjectAccessReviewREST returns the storage asking authz.
func NewSelfSubjectAccessReviewREST(authz authorizer.Authorizer) *SelfSubjectAccessReviewREST {
	return &SelfSubjectAccessReviewREST{authz: authz}
}

var (
	_ rest.Creater              = (*SelfSubjectAccessReviewREST)(nil)
	_ rest.Storage              = (*SelfSubjectAccessReviewREST)(nil)
	_ rest.Scoper               = (*SelfSubjectAccessReviewREST)(nil)
	_ rest.SingularNameProvider = (*SelfSubjectAccessReviewREST)(nil)
)

// New implements rest.Storage.
func (*SelfSubjectAccessReviewREST) New() runtime.Object {
	return &authorizationv1.SelfSubjectAccessReview{}
}

// Destroy implements rest.Storage.
func (*SelfSubjectAccessReviewREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (*SelfSubjectAccessReviewREST) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (*SelfSubjectAccessReviewREST) GetSingularName() string { return "selfsubjectaccessreview" }

// Create implements rest.Creater.
func (r *SelfSubjectAccessReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectAccessReview: %T", obj))
	}
	spec := field.NewPath("spec")
	var errs field.ErrorList
	switch ra, nra := review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes; {
	case ra == nil && nra == nil:
		errs = append(errs, field.Required(spec.Child("resourceAttributes"), "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	case ra != nil && nra != nil:
		errs = append(errs, field.Invalid(spec.Child("nonResourceAttributes"), nra, "cannot be specified in combination with resourceAttributes"))
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind(), "", errs)
	}
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	attrs := authorizer.AttributesRecord{User: u}
	if ra := review.Spec.ResourceAttributes; ra != nil {
		attrs.Verb, attrs.Namespace, attrs.APIGroup, attrs.APIVersion = ra.Verb, ra.Namespace, ra.Group, ra.Version
		attrs.Resource, attrs.Subresource, attrs.Name = ra.Resource, ra.Subresource, ra.Name
		attrs.ResourceRequest = true
	} else {
		attrs.Verb, attrs.Path = review.Spec.NonResourceAttributes.Verb, review.Spec.NonResourceAttributes.Path
	}
	decision, reason, err := r.authz.Authorize(ctx, attrs)
	review.Status = authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == authorizer.DecisionAllow,
		Denied:  decision == authorizer.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		review.Status.EvaluationError = err.Error()
	}
	return review, nil
}

// SelfSubjectRulesReviewREST is the storage of authorization.k8s.io/v1
// selfsubjectrulesreviews: create lists the rules bound to the requesting
// user in spec.namespace (required). kubectl auth can-i --list uses it.
type SelfSubjectRulesReviewREST struct {
	resolver authorizer.RuleResolver
}

// NewSelfSubjectRulesReviewREST returns the storage asking resolver.
func NewSelfSubjectRulesReviewREST(resolver authorizer.RuleResolver) *SelfSubjectRulesReviewREST {
	return &SelfSubjectRulesReviewREST{resolver: resolver}
}

var (
	_ rest.Creater              = (*SelfSubjectRulesReviewREST)(nil)
	_ rest.Storage              = (*SelfSubjectRulesReviewREST)(nil)
	_ rest.Scoper               = (*SelfSubjectRulesReviewREST)(nil)
	_ rest.SingularNameProvider = (*SelfSubjectRulesReviewREST)(nil)
)

// New implements rest.Storage.
func (*SelfSubjectRulesReviewREST) New() runtime.Object {
	return &authorizationv1.SelfSubjectRulesReview{}
}

// Destroy implements rest.Storage.
func (*SelfSubjectRulesReviewREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (*SelfSubjectRulesReviewREST) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (*SelfSubjectRulesReviewREST) GetSingularName() string { return "selfsubjectrulesreview" }

// Create implements rest.Creater.
func (r *SelfSubjectRulesReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectRulesReview: %T", obj))
	}
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	ns := review.Spec.Namespace
	if ns == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	resourceInfo, nonResourceInfo, incomplete, err := r.resolver.RulesFor(ctx, u, ns)
	out := &authorizationv1.SelfSubjectRulesReview{
		Spec: review.Spec,
		Status: authorizationv1.SubjectRulesReviewStatus{
			ResourceRules:    make([]authorizationv1.ResourceRule, len(resourceInfo)),
			NonResourceRules: make([]authorizationv1.NonResourceRule, len(nonResourceInfo)),
			Incomplete:       incomplete,
		},
	}
	for i, info := range resourceInfo {
		out.Status.ResourceRules[i] = authorizationv1.ResourceRule{
			Verbs: info.GetVerbs(), APIGroups: info.GetAPIGroups(), Resources: info.GetResources(), ResourceNames: info.GetResourceNames(),
		}
	}
	for i, info := range nonResourceInfo {
		out.Status.NonResourceRules[i] = authorizationv1.NonResourceRule{Verbs: info.GetVerbs(), NonResourceURLs: info.GetNonResourceURLs()}
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}

// SelfSubjectReviewREST is the storage of authentication.k8s.io/v1
// selfsubjectreviews: create returns the requesting user (name, UID,
// groups, extra). kubectl auth whoami uses it.
type SelfSubjectReviewREST struct{}

// NewSelfSubjectReviewREST returns the storage.
func NewSelfSubjectReviewREST() *SelfSubjectReviewREST { return &SelfSubjectReviewREST{} }

var (
	_ rest.Creater              = (*SelfSubjectReviewREST)(nil)
	_ rest.Storage              = (*SelfSubjectReviewREST)(nil)
	_ rest.Scoper               = (*SelfSubjectReviewREST)(nil)
	_ rest.SingularNameProvider = (*SelfSubjectReviewREST)(nil)
)

// New implements rest.Storage.
func (*SelfSubjectReviewREST) New() runtime.Object { return &authenticationv1.SelfSubjectReview{} }

// Destroy implements rest.Storage.
func (*SelfSubjectReviewREST) Destroy() {}

// NamespaceScoped implements rest.Scoper.
func (*SelfSubjectReviewREST) NamespaceScoped() bool { return false }

// GetSingularName implements rest.SingularNameProvider.
func (*SelfSubjectReviewREST) GetSingularName() string { return "selfsubjectreview" }

// Create implements rest.Creater.
func (*SelfSubjectReviewREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	if _, ok := obj.(*authenticationv1.SelfSubjectReview); !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectReview: %T", obj))
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	u, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	out := &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()},
		Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{
			Username: u.GetName(), UID: u.GetUID(), Groups: u.GetGroups(),
		}},
	}
	if extra := u.GetExtra(); len(extra) > 0 {
		out.Status.UserInfo.Extra = make(map[string]authenticationv1.ExtraValue, len(extra))
		for k, v := range extra {
			out.Status.UserInfo.Extra[k] = v
		}
	}
	return out, nil
}
