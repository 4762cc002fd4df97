package get_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/get"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/kube"
	"github.com/virtkit/virtkit/store"
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
	require.NoError(t, o.Complete([]string{"vm"}))
	require.ErrorIs(t, o.Run(t.Context()), get.ErrNoTransport)
}

// serve starts an API server over st in the test's process.
func serve(t *testing.T, st store.Store) *kube.Client {
	t.Helper()
	e, err := kube.StartEmbedded(t.Context(), kube.EmbeddedOptions{Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e.Client
}

// Complete, Validate and Run: the server's table, in the default and wide
// outputs, without a NAMESPACE column for a cluster-scoped kind.
func TestRunTables(t *testing.T) {
	st := store.NewMemory()
	require.NoError(t, st.Create(t.Context(), &virtkit.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fast"}}))
	require.NoError(t, st.Create(t.Context(), &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: virtkit.NodeStatus{Hypervisor: "sim"}}))
	api := serve(t, st)
	for _, tc := range []struct{ kind, output, want string }{
		{"migrationpolicies", "", `^NAME\s+AGE\nfast\s+\S+\n$`},
		// nodes are the core group's, as kubectl shows them.
		{"nodes", "table", `^NAME\s+STATUS\s+ROLES\s+AGE\s+VERSION\nn1\s+\S+\s+<none>\s+\S+\s+virtkit\n$`},
		{"no", "name", `^node(\.\S+)?/n1\n$`},
	} {
		var out bytes.Buffer
		o := get.Options{Out: &out, API: api, Namespace: "default", Output: tc.output}
		require.NoError(t, o.Complete([]string{tc.kind}))
		require.NoError(t, o.Validate())
		require.NoError(t, o.Run(t.Context()))
		assert.Regexp(t, tc.want, out.String(), tc.kind+" "+tc.output)
	}
}
