package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// ErrStoreWatch: Store serves the one-shot calls of the node verbs only.
var ErrStoreWatch = errors.New("watch through the API store adapter is not implemented")

// Store is a store.Store over the control plane's API, so the node verbs
// run the same library code (controller.Drain, Cordon, Uncordon) through a
// kubeconfig as against etcd: the server's authentication,
// authorization and admission apply. The server's errors map to the
// store's sentinels (NotFound, Conflict, AlreadyExists) so that conflict
// retries work. Watch is not implemented.
type Store struct {
	c      *Client
	scheme *store.Scheme
}

var _ store.Store = (*Store)(nil)

// NewStore is a Store over c.
func NewStore(c *Client) (*Store, error) {
	s, err := store.NewScheme(store.DefaultKinds()...)
	if err != nil {
		return nil, err
	}
	return &Store{c: c, scheme: s}, nil
}

// resource is the dynamic client of obj's (or list's) kind in namespace.
func (s *Store) resource(obj runtime.Object, namespace string) (dynamic.ResourceInterface, store.Kind, error) {
	k, err := s.scheme.KindOf(obj)
	if err != nil {
		return nil, k, err
	}
	gv, err := schema.ParseGroupVersion(k.APIVersion)
	if err != nil {
		return nil, k, err
	}
	m, err := s.c.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: k.Name}, gv.Version)
	if err != nil {
		return nil, k, fmt.Errorf("%s: %w", k.Name, err)
	}
	return s.c.ResourceFor(m, namespace), k, nil
}

// storeErr maps the server's statuses to the store's sentinels, keeping
// the server's error.
func storeErr(err error) error {
	switch {
	case err == nil:
		return nil
	case apierrors.IsNotFound(err):
		return fmt.Errorf("%w: %w", store.ErrNotFound, err)
	case apierrors.IsConflict(err):
		return fmt.Errorf("%w: %w", store.ErrConflict, err)
	case apierrors.IsAlreadyExists(err):
		return fmt.Errorf("%w: %w", store.ErrAlreadyExists, err)
	}
	return err
}

func toUnstructured(obj virtkit.Object, k store.Kind) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	// Objects in Go may leave their TypeMeta empty; the kind is set below.
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(k.APIVersion)
	u.SetKind(k.Name)
	return u, nil
}

// fill decodes the server's object into obj.
func fill(u json.Marshaler, obj any) error {
	raw, err := u.MarshalJSON()
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, obj)
}

func (s *Store) Get(ctx context.Context, key store.Key, obj virtkit.Object) error {
	r, _, err := s.resource(obj, key.Namespace)
	if err != nil {
		return err
	}
	u, err := r.Get(ctx, key.Name, metav1.GetOptions{})
	if err != nil {
		return storeErr(err)
	}
	return fill(u, obj)
}

func (s *Store) List(ctx context.Context, list virtkit.ObjectList, opts store.ListOptions) error {
	r, _, err := s.resource(list, opts.Namespace)
	if err != nil {
		return err
	}
	lo := metav1.ListOptions{}
	if opts.LabelSelector != nil {
		lo.LabelSelector = opts.LabelSelector.String()
	}
	ul, err := r.List(ctx, lo)
	if err != nil {
		return storeErr(err)
	}
	return fill(ul, list)
}

// write sends obj with do and decodes the reply into obj.
func (s *Store) write(ctx context.Context, obj virtkit.Object, do func(dynamic.ResourceInterface, *unstructured.Unstructured) (*unstructured.Unstructured, error)) error {
	r, k, err := s.resource(obj, obj.GetNamespace())
	if err != nil {
		return err
	}
	u, err := toUnstructured(obj, k)
	if err != nil {
		return err
	}
	out, err := do(r, u)
	if err != nil {
		return storeErr(err)
	}
	return fill(out, obj)
}

func (s *Store) Create(ctx context.Context, obj virtkit.Object) error {
	return s.write(ctx, obj, func(r dynamic.ResourceInterface, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return r.Create(ctx, u, metav1.CreateOptions{})
	})
}

func (s *Store) Update(ctx context.Context, obj virtkit.Object) error {
	return s.write(ctx, obj, func(r dynamic.ResourceInterface, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return r.Update(ctx, u, metav1.UpdateOptions{})
	})
}

func (s *Store) UpdateStatus(ctx context.Context, obj virtkit.Object) error {
	return s.write(ctx, obj, func(r dynamic.ResourceInterface, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return r.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	})
}

func (s *Store) Delete(ctx context.Context, obj virtkit.Object, opts store.DeleteOptions) error {
	r, _, err := s.resource(obj, obj.GetNamespace())
	if err != nil {
		return err
	}
	if err := r.Delete(ctx, obj.GetName(), metav1.DeleteOptions{Preconditions: opts.Preconditions}); err != nil {
		return storeErr(err)
	}
	// The state after the delete: marked for deletion, or gone.
	u, err := r.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return storeErr(err)
	}
	return fill(u, obj)
}

func (s *Store) Watch(context.Context, virtkit.ObjectList, store.WatchOptions) (<-chan store.Event, error) {
	return nil, ErrStoreWatch
}
