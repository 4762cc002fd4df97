package corev1

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
)

// strategy is the create, update and delete strategy of one stored kind:
// the hooks it does not set do nothing.
type strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
	namespaced     bool
	prepareCreate  func(obj runtime.Object)
	prepareUpdate  func(obj, old runtime.Object)
	validate       func(obj runtime.Object) field.ErrorList
	validateUpdate func(obj, old runtime.Object) field.ErrorList
}

var (
	_ rest.RESTCreateStrategy = strategy{}
	_ rest.RESTUpdateStrategy = strategy{}
	_ rest.RESTDeleteStrategy = strategy{}
)

func (s strategy) NamespaceScoped() bool { return s.namespaced }

func (s strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	if s.prepareCreate != nil {
		s.prepareCreate(obj)
	}
}

func (s strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	if s.prepareUpdate != nil {
		s.prepareUpdate(obj, old)
	}
}

func (s strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	if s.validate == nil {
		return nil
	}
	return s.validate(obj)
}

func (s strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	if s.validateUpdate == nil {
		return s.Validate(context.Background(), obj)
	}
	return s.validateUpdate(obj, old)
}

func (strategy) WarningsOnCreate(context.Context, runtime.Object) []string { return nil }

func (strategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (strategy) Canonicalize(runtime.Object) {}

func (strategy) AllowCreateOnUpdate(context.Context) bool { return false }

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return true }
