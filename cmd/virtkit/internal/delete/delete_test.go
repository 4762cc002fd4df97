package delete_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	deletecmd "github.com/virtkit/virtkit/cmd/virtkit/internal/delete"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
	"github.com/virtkit/virtkit/store"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    deletecmd.Options
		args []string
		want string
	}{
		{"cascade", deletecmd.Options{Cascade: "sideways"}, []string{"vm", "a"}, `--cascade: "sideways"`},
		{"both", deletecmd.Options{Files: []string{"x.yaml"}}, []string{"vm"}, "not both"},
		{"nothing", deletecmd.Options{}, []string{"vm"}, "give KIND NAME... or -f FILE"},
		{"names", deletecmd.Options{Cascade: "orphan"}, []string{"vm", "a", "b"}, ""},
		{"files", deletecmd.Options{Files: []string{"x.yaml"}}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			err := o.Complete(tc.args)
			if err == nil {
				err = o.Validate()
			}
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// Through the API served over a store, each name is deleted with
// --cascade's propagation.
func TestRun(t *testing.T) {
	st := kubetest.NewMemory(t)
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"}}
	require.NoError(t, st.Create(t.Context(), vm))
	var out bytes.Buffer
	o := deletecmd.Options{Out: &out, Namespace: "default", API: kubetest.Serve(t, st), Cascade: "orphan"}
	require.NoError(t, o.Complete([]string{"vms", "vm1"}))
	require.NoError(t, o.Validate())
	require.NoError(t, o.Run(t.Context()))
	assert.Equal(t, "virtualmachine.kubevirt.io \"vm1\" deleted\n", out.String())
	got := &virtkit.VirtualMachine{}
	require.NoError(t, st.Get(t.Context(), store.KeyOf(vm), got))
	assert.Equal(t, []string{store.FinalizerOrphanDependents}, got.Finalizers)
	require.ErrorIs(t, (&deletecmd.Options{}).Run(t.Context()), deletecmd.ErrNoTransport)
}
