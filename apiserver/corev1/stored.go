package corev1

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/utils/clock"
)

// storedKind describes one kind kept through the RESTOptionsGetter.
type storedKind struct {
	resource, singular string
	// shortNames are kubectl's abbreviations (Kubernetes' own: cm, sa).
	shortNames      []string
	newObj, newList func() runtime.Object
	// fields are the selectable fields besides metadata.name/namespace.
	fields func(obj runtime.Object) fields.Set
	// columns are kubectl get's columns between NAME and AGE.
	columns []column
	strategy
}

// newRegistryStore builds the registry.Store of a stored kind.
func newRegistryStore(getter generic.RESTOptionsGetter, typer runtime.ObjectTyper, clk clock.PassiveClock, k storedKind) (*registry.Store, error) {
	k.ObjectTyper = typer
	k.NameGenerator = names.SimpleNameGenerator
	gr := corev1.Resource(k.resource)
	s := &registry.Store{
		NewFunc:                   k.newObj,
		NewListFunc:               k.newList,
		DefaultQualifiedResource:  gr,
		SingularQualifiedResource: corev1.Resource(k.singular),
		CreateStrategy:            k.strategy,
		UpdateStrategy:            k.strategy,
		DeleteStrategy:            k.strategy,
		TableConvertor:            table{clock: clk, columns: append(append([]column{nameColumn()}, k.columns...), ageColumn())},
	}
	attrs := func(obj runtime.Object) (labels.Set, fields.Set, error) {
		return objectAttrs(obj, k.namespaced, k.fields)
	}
	s.PredicateFunc = func(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
		return storage.SelectionPredicate{Label: label, Field: field, GetAttrs: attrs}
	}
	if err := s.CompleteWithOptions(&generic.StoreOptions{RESTOptions: getter, AttrFunc: attrs}); err != nil {
		return nil, fmt.Errorf("%s: %w", k.resource, err)
	}
	return s, nil
}

// shortNamedStore is a registry.Store that tells discovery its short names.
type shortNamedStore struct {
	*registry.Store
	shortNames []string
}

// ShortNames implements rest.ShortNamesProvider.
func (s shortNamedStore) ShortNames() []string { return s.shortNames }

// objectAttrs returns obj's labels and selectable fields: metadata.name,
// metadata.namespace (namespaced kinds) and those extra returns.
func objectAttrs(obj runtime.Object, namespaced bool, extra func(runtime.Object) fields.Set) (labels.Set, fields.Set, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil, err
	}
	f := fields.Set{"metadata.name": m.GetName()}
	if namespaced {
		f["metadata.namespace"] = m.GetNamespace()
	}
	if extra != nil {
		f = generic.MergeFieldsSets(f, extra(obj))
	}
	return labels.Set(m.GetLabels()), f, nil
}

// configMaps is the configmaps resource.
func configMaps() storedKind {
	return storedKind{
		resource: "configmaps", singular: "configmap", shortNames: []string{"cm"},
		newObj:  func() runtime.Object { return &corev1.ConfigMap{} },
		newList: func() runtime.Object { return &corev1.ConfigMapList{} },
		columns: []column{intColumn("Data", func(obj runtime.Object) int {
			cm := obj.(*corev1.ConfigMap)
			return len(cm.Data) + len(cm.BinaryData)
		})},
		strategy: strategy{
			namespaced: true,
			validate:   func(obj runtime.Object) field.ErrorList { return ValidateConfigMap(obj.(*corev1.ConfigMap)) },
			validateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return ValidateConfigMapUpdate(obj.(*corev1.ConfigMap), old.(*corev1.ConfigMap))
			},
		},
	}
}

// secrets is the secrets resource; an empty type is Opaque.
func secrets() storedKind {
	return storedKind{
		resource: "secrets", singular: "secret",
		newObj:  func() runtime.Object { return &corev1.Secret{} },
		newList: func() runtime.Object { return &corev1.SecretList{} },
		columns: []column{
			{def: metav1.TableColumnDefinition{Name: "Type", Type: "string"}, cell: func(obj runtime.Object, _ time.Time) any {
				return string(obj.(*corev1.Secret).Type)
			}},
			intColumn("Data", func(obj runtime.Object) int { return len(obj.(*corev1.Secret).Data) }),
		},
		fields: func(obj runtime.Object) fields.Set {
			return fields.Set{"type": string(obj.(*corev1.Secret).Type)}
		},
		strategy: strategy{
			namespaced: true,
			prepareCreate: func(obj runtime.Object) {
				s := obj.(*corev1.Secret)
				if s.Type == "" {
					s.Type = corev1.SecretTypeOpaque
				}
				// stringData is write-only: it lands in data.
				for k, v := range s.StringData {
					if s.Data == nil {
						s.Data = map[string][]byte{}
					}
					s.Data[k] = []byte(v)
				}
				s.StringData = nil
			},
			prepareUpdate: func(obj, old runtime.Object) {
				s := obj.(*corev1.Secret)
				if s.Type == "" {
					s.Type = old.(*corev1.Secret).Type
				}
				for k, v := range s.StringData {
					if s.Data == nil {
						s.Data = map[string][]byte{}
					}
					s.Data[k] = []byte(v)
				}
				s.StringData = nil
			},
			validate: func(obj runtime.Object) field.ErrorList { return ValidateSecret(obj.(*corev1.Secret)) },
			validateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return ValidateSecretUpdate(obj.(*corev1.Secret), old.(*corev1.Secret))
			},
		},
	}
}

// serviceAccounts is the serviceaccounts resource.
func serviceAccounts() storedKind {
	return storedKind{
		resource: "serviceaccounts", singular: "serviceaccount", shortNames: []string{"sa"},
		newObj:  func() runtime.Object { return &corev1.ServiceAccount{} },
		newList: func() runtime.Object { return &corev1.ServiceAccountList{} },
		columns: []column{intColumn("Secrets", func(obj runtime.Object) int { return len(obj.(*corev1.ServiceAccount).Secrets) })},
		strategy: strategy{
			namespaced: true,
			validate:   func(obj runtime.Object) field.ErrorList { return ValidateServiceAccount(obj.(*corev1.ServiceAccount)) },
		},
	}
}
