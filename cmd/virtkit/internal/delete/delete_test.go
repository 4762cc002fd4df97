package delete_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	deletecmd "github.com/virtkit/virtkit/cmd/virtkit/internal/delete"
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
		{"store: -f", deletecmd.Options{Files: []string{"x.yaml"}}, nil, "-f: needs the API"},
		{"store: no name", deletecmd.Options{}, []string{"vm"}, "requires KIND and at least one NAME, received 1 arg(s)"},
		{"store: unknown kind", deletecmd.Options{}, []string{"pods", "a"}, `unknown resource type "pods"`},
		{"api: both", deletecmd.Options{UseAPI: true, Files: []string{"x.yaml"}}, []string{"vm"}, "not both"},
		{"api: nothing", deletecmd.Options{UseAPI: true}, []string{"vm"}, "give KIND NAME... or -f FILE"},
		{"store: fine", deletecmd.Options{Cascade: "orphan"}, []string{"vm", "a", "b"}, ""},
		{"api: fine", deletecmd.Options{UseAPI: true, Files: []string{"x.yaml"}}, nil, ""},
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

// Through a store, each name is deleted with --cascade's propagation.
func TestRunStore(t *testing.T) {
	st := store.NewMemory()
	vm := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1"}}
	require.NoError(t, st.Create(t.Context(), vm))
	var out bytes.Buffer
	o := deletecmd.Options{Out: &out, Namespace: "default", Store: st, Cascade: "orphan"}
	require.NoError(t, o.Complete([]string{"vms", "vm1"}))
	require.NoError(t, o.Validate())
	require.NoError(t, o.Run(t.Context()))
	assert.Equal(t, "virtualmachine/vm1 deleted\n", out.String())
	got := &virtkit.VirtualMachine{}
	require.NoError(t, st.Get(t.Context(), store.KeyOf(vm), got))
	assert.Equal(t, []string{store.FinalizerOrphanDependents}, got.Finalizers)
	require.ErrorIs(t, (&deletecmd.Options{UseAPI: true}).Run(t.Context()), deletecmd.ErrNoTransport)
}
