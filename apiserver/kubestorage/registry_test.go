package kubestorage_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/store"
)

// vmStrategy is a minimal registry strategy for VirtualMachines: what a
// server's strategy adds (validation, status handling) does not matter to
// the storage.
type vmStrategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

func (vmStrategy) NamespaceScoped() bool { return true }
func (vmStrategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*virtkit.VirtualMachine).Generation = 1
}
func (vmStrategy) Validate(context.Context, runtime.Object) field.ErrorList         { return nil }
func (vmStrategy) WarningsOnCreate(context.Context, runtime.Object) []string        { return nil }
func (vmStrategy) Canonicalize(runtime.Object)                                      {}
func (vmStrategy) AllowCreateOnUpdate(context.Context) bool                         { return false }
func (vmStrategy) AllowUnconditionalUpdate(context.Context) bool                    { return true }
func (vmStrategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (vmStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}
func (vmStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

// newVMRegistry returns a registry.Store of VirtualMachines completed with
// RESTOptionsGetter over backend, as the API server builds them.
func newVMRegistry(t *testing.T, backend kubestorage.Backend) *registry.Store {
	t.Helper()
	gv := schema.GroupVersion{Group: "kubevirt.io", Version: "v1"}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(gv, &virtkit.VirtualMachine{}, &virtkit.VirtualMachineList{})
	metav1.AddToGroupVersion(scheme, gv)
	strategy := vmStrategy{ObjectTyper: scheme, NameGenerator: names.SimpleNameGenerator}
	r := &registry.Store{
		NewFunc:                   func() runtime.Object { return &virtkit.VirtualMachine{} },
		NewListFunc:               func() runtime.Object { return &virtkit.VirtualMachineList{} },
		DefaultQualifiedResource:  gv.WithResource("virtualmachines").GroupResource(),
		SingularQualifiedResource: gv.WithResource("virtualmachine").GroupResource(),
		CreateStrategy:            strategy,
		UpdateStrategy:            strategy,
		DeleteStrategy:            strategy,
		TableConvertor:            rest.NewDefaultTableConvertor(gv.WithResource("virtualmachines").GroupResource()),
	}
	getter := kubestorage.RESTOptionsGetter(backend, kubestorage.Options{})
	require.NoError(t, r.CompleteWithOptions(&generic.StoreOptions{RESTOptions: getter}))
	t.Cleanup(r.Destroy)
	return r
}

// A registry.Store on the storage and a controller on store.Store share
// objects and their lifecycle: the server creates and starts a graceful
// deletion, the controller writes status and removes the finalizer, and
// the object is gone for both.
func TestRegistryAndStoreShareLifecycle(t *testing.T) {
	m, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	require.NoError(t, err)
	r := newVMRegistry(t, m)
	ctx := genericapirequest.WithNamespace(context.Background(), "default")

	in := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Finalizers: []string{"kubevirt.io/test"}}}

	// A dry run goes through the storage's checks (copied with the
	// default codec) and writes nothing.
	dry, err := r.Create(ctx, in.DeepCopy(), rest.ValidateAllObjectFunc, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err)
	assert.Equal(t, "vm1", dry.(*virtkit.VirtualMachine).Name)
	require.ErrorIs(t, m.Get(ctx, store.Key{Namespace: "default", Name: "vm1"}, &virtkit.VirtualMachine{}), store.ErrNotFound)

	out, err := r.Create(ctx, in, rest.ValidateAllObjectFunc, &metav1.CreateOptions{})
	require.NoError(t, err)
	created := out.(*virtkit.VirtualMachine)
	require.NotEmpty(t, created.UID, "the registry sets the uid")

	// The controller sees the server's object and writes its status.
	vm := &virtkit.VirtualMachine{}
	require.NoError(t, m.Get(ctx, store.Key{Namespace: "default", Name: "vm1"}, vm))
	assert.Equal(t, created.UID, vm.UID)
	assert.Equal(t, created.ResourceVersion, vm.ResourceVersion)
	assert.Equal(t, int64(1), vm.Generation)
	assert.Equal(t, created.CreationTimestamp.Unix(), vm.CreationTimestamp.Unix())
	vm.Status.Ready = true
	require.NoError(t, m.UpdateStatus(ctx, vm))

	got, err := r.Get(ctx, "vm1", &metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, got.(*virtkit.VirtualMachine).Status.Ready)
	assert.Equal(t, vm.ResourceVersion, got.(*virtkit.VirtualMachine).ResourceVersion)

	list, err := r.List(ctx, &metainternalversion.ListOptions{})
	require.NoError(t, err)
	require.Len(t, list.(*virtkit.VirtualMachineList).Items, 1)

	// The server deletes: the finalizer holds the object, marked.
	_, immediate, err := r.Delete(ctx, "vm1", rest.ValidateAllObjectFunc, &metav1.DeleteOptions{})
	require.NoError(t, err)
	assert.False(t, immediate)
	require.NoError(t, m.Get(ctx, store.Key{Namespace: "default", Name: "vm1"}, vm))
	require.NotNil(t, vm.DeletionTimestamp, "the store sees the server's graceful deletion")

	// The controller removes its finalizer: the store's rules delete it.
	vm.Finalizers = nil
	require.NoError(t, m.Update(ctx, vm))
	_, err = r.Get(ctx, "vm1", &metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "gone for the server: %v", err)
}
