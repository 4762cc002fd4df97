package apiserver_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
)

func unstructuredOf(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	return u
}

// The generic server and the store share objects: a VM created through
// the API is defaulted, validated and visible to store.Store; one the
// store writes is visible through the API.
func TestGenericCreateSharesStore(t *testing.T) {
	ts := startGeneric(t, apiserver.GenericOptions{})
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(ts.admin())
	require.NoError(t, err)
	vms := dyn.Resource(vmGVR).Namespace("default")

	created, err := vms.Create(ctx, unstructuredOf(t, vmManifest("default", "vm1", "Always")), metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), created.GetGeneration())
	vm := &virtkit.VirtualMachine{}
	require.NoError(t, ts.Store.Get(ctx, store.Key{Namespace: "default", Name: "vm1"}, vm))
	assert.Equal(t, created.GetUID(), vm.UID)
	require.NotNil(t, vm.Spec.Template)

	bad := unstructuredOf(t, vmManifest("default", "vm2", "Sometimes"))
	_, err = vms.Create(ctx, bad, metav1.CreateOptions{})
	require.True(t, apierrors.IsInvalid(err), "%v", err)
	assert.Contains(t, err.Error(), "spec.runStrategy")

	_, err = dyn.Resource(vmGVR).Namespace("nowhere").Create(ctx, unstructuredOf(t, vmManifest("nowhere", "vm3", "Always")), metav1.CreateOptions{})
	require.True(t, apierrors.IsNotFound(err), "a write into a missing namespace: %v", err)

	objs, err := virtkit.DecodeBytes([]byte(vmManifest("default", "vm-store", "Halted")))
	require.NoError(t, err)
	other := objs[0]
	require.NoError(t, ts.Store.Create(ctx, other))
	got, err := vms.Get(ctx, "vm-store", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, string(other.GetUID()), string(got.GetUID()))
}

// A memory store at resourceVersion 0 cannot back the generic server:
// Start says how to create it.
func TestGenericRefusesStoreAtVersionZero(t *testing.T) {
	srv, err := apiserver.NewGeneric(apiserver.GenericOptions{Store: store.NewMemory()})
	require.NoError(t, err)
	err = srv.Start(t.Context())
	require.ErrorIs(t, err, apiserver.ErrOptions)
	assert.Contains(t, err.Error(), "StartResourceVersion")
}
