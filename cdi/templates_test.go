package cdi_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

func testVM() *virtkit.VirtualMachine {
	rs := virtkit.RunStrategyHalted
	return &virtkit.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "vm", Namespace: "ns"},
		Spec: virtkit.VirtualMachineSpec{
			RunStrategy: &rs,
			Template:    &virtkit.VirtualMachineInstanceTemplateSpec{},
			DataVolumeTemplates: []virtkit.DataVolumeTemplateSpec{{
				ObjectMeta: metav1.ObjectMeta{Name: "root"},
				Spec: virtkit.DataVolumeSpec{
					Source: &virtkit.DataVolumeImportSource{Blank: &virtkit.DataVolumeBlankImage{}},
					Storage: &virtkit.PersistentVolumeClaimSpec{Resources: virtkit.VolumeResourceRequirements{
						Requests: virtkit.ResourceList{virtkit.ResourceStorage: resource.MustParse("1Mi")}}},
				},
			}},
		},
	}
}

func TestTemplateReconcilerCreatesOwnsAndCollects(t *testing.T) {
	ctx := context.Background()
	s := store.NewMemory()
	vm := testVM()
	require.NoError(t, s.Create(ctx, vm))
	r := cdi.NewTemplateReconciler(cdi.TemplateOptions{Store: s})
	req := reconcile.Request{Namespace: "ns", Name: "vm"}

	_, err := r.Reconcile(ctx, req)
	require.NoError(t, err)
	_, err = r.Reconcile(ctx, req) // idempotent
	require.NoError(t, err)

	dv := &virtkit.DataVolume{}
	require.NoError(t, s.Get(ctx, store.Key{Namespace: "ns", Name: "root"}, dv))
	ref := metav1.GetControllerOf(dv)
	require.NotNil(t, ref)
	assert.Equal(t, vm.UID, ref.UID)
	assert.Equal(t, virtkit.KindVirtualMachine, ref.Kind)
	assert.Equal(t, virtkit.DataVolumeKubeVirt, dv.Spec.ContentType, "defaults applied")

	require.NoError(t, s.Delete(ctx, vm, store.DeleteOptions{}))
	_, err = r.Reconcile(ctx, req)
	require.NoError(t, err)
	err = s.Get(ctx, store.Key{Namespace: "ns", Name: "root"}, dv)
	assert.ErrorIs(t, err, store.ErrNotFound)
}

func TestTemplateReconcilerRefusesForeignDataVolume(t *testing.T) {
	ctx := context.Background()
	s := store.NewMemory()
	vm := testVM()
	require.NoError(t, s.Create(ctx, vm))
	other := virtkit.DataVolumeForTemplate(&virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns", UID: "x"}},
		&vm.Spec.DataVolumeTemplates[0])
	require.NoError(t, s.Create(ctx, other))
	_, err := cdi.NewTemplateReconciler(cdi.TemplateOptions{Store: s}).Reconcile(ctx, reconcile.Request{Namespace: "ns", Name: "vm"})
	assert.ErrorIs(t, err, cdi.ErrNotOwned)
	// The foreign DataVolume survives the VM's deletion.
	require.NoError(t, s.Delete(ctx, vm, store.DeleteOptions{}))
	_, err = cdi.NewTemplateReconciler(cdi.TemplateOptions{Store: s}).Reconcile(ctx, reconcile.Request{Namespace: "ns", Name: "vm"})
	require.NoError(t, err)
	require.NoError(t, s.Get(ctx, store.Key{Namespace: "ns", Name: "root"}, &virtkit.DataVolume{}))
}
