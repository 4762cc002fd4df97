package main

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
	"github.com/virtkit/virtkit/store"
)

func TestParseCascade(t *testing.T) {
	for _, tc := range []struct {
		flag string
		want metav1.DeletionPropagation
		err  bool
	}{
		{"background", metav1.DeletePropagationBackground, false},
		{"Foreground", metav1.DeletePropagationForeground, false},
		{"orphan", metav1.DeletePropagationOrphan, false},
		{"true", metav1.DeletePropagationBackground, false},
		{"false", metav1.DeletePropagationOrphan, false},
		{"sideways", "", true},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			got, err := parseCascade(tc.flag)
			if tc.err {
				require.ErrorContains(t, err, "--cascade")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// delete --cascade=orphan puts the orphan finalizer on the object for the
// controller process's garbage collector.
func TestDeleteCascadeOrphanStore(t *testing.T) {
	st := kubetest.NewMemory(t)
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"}}
	require.NoError(t, st.Create(t.Context(), vm))
	var out bytes.Buffer
	require.NoError(t, runDelete(t, serveAt(t, st, time.Time{}), &out, io.Discard, "vm", "default", []string{"vm1"}, "orphan"))
	assert.Equal(t, "virtualmachine.kubevirt.io \"vm1\" deleted\n", out.String())
	got := &virtkit.VirtualMachine{}
	require.NoError(t, st.Get(t.Context(), store.KeyOf(vm), got))
	assert.NotNil(t, got.DeletionTimestamp)
	assert.Equal(t, []string{store.FinalizerOrphanDependents}, got.Finalizers)
}
