package get_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/get"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube/kubetest"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    get.Options
		args []string
		want string
	}{
		{"output", get.Options{Output: "xml"}, []string{"vm"}, `output format "xml"`},
		{"name and -A", get.Options{AllNamespaces: true}, []string{"vm", "a"}, "across all namespaces"},
		{"table", get.Options{Output: "table"}, []string{"vm", "a"}, ""},
		{"jsonpath", get.Options{Output: "jsonpath={.metadata.name}"}, []string{"anything"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			require.NoError(t, o.Complete(tc.args))
			err := o.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
	o := get.Options{}
	require.Error(t, o.Complete(nil))
	o = get.Options{}
	require.NoError(t, o.Complete([]string{"vm"}))
	require.ErrorIs(t, o.Run(t.Context()), get.ErrNoTransport)
}

// Complete, Validate and Run through the API served over a store: the
// server's tables, a cluster-scoped kind without a NAMESPACE column, and
// kubectl's -o name.
func TestRun(t *testing.T) {
	st := kubetest.NewMemory(t)
	require.NoError(t, st.Create(t.Context(), &virtkit.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fast"}}))
	require.NoError(t, st.Create(t.Context(), &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: virtkit.NodeStatus{Hypervisor: "sim"}}))
	api := kubetest.Serve(t, st)
	for _, tc := range []struct{ kind, output, want string }{
		{"migrationpolicies", "table", `^NAME\s+AGE\nfast\s+\S+\n$`},
		{"nodes", "table", `^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\nn1\s+Unknown\s+<none>\s+\S+\s+virtkit\n$`},
		{"nodes", "name", `^node/n1\n$`},
	} {
		var out bytes.Buffer
		o := get.Options{Out: &out, API: api, Namespace: "default", Output: tc.output}
		require.NoError(t, o.Complete([]string{tc.kind}))
		require.NoError(t, o.Validate())
		require.NoError(t, o.Run(t.Context()))
		assert.Regexp(t, tc.want, out.String(), tc.kind+" "+tc.output)
	}
}
