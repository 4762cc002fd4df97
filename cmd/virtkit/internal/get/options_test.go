package get_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cmd/virtkit/internal/get"
	"github.com/virtkit/virtkit/store"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    get.Options
		args []string
		want string
	}{
		{"store: unknown kind", get.Options{}, []string{"pods"}, `unknown resource type "pods"`},
		{"store: selector", get.Options{Selector: "a=b"}, []string{"vm"}, "-l, -w: need the API"},
		{"store: output", get.Options{Output: "name"}, []string{"vm"}, `--output: want table, wide, json or yaml, got "name"`},
		{"store: name and -A", get.Options{AllNamespaces: true}, []string{"vm", "a"}, "-A: cannot be combined with a NAME"},
		{"api: output", get.Options{UseAPI: true, Output: "xml"}, []string{"vm"}, `output format "xml"`},
		{"api: name and -A", get.Options{UseAPI: true, AllNamespaces: true}, []string{"vm", "a"}, "across all namespaces"},
		{"store: fine", get.Options{Output: "yaml"}, []string{"vm", "a"}, ""},
		{"api: fine", get.Options{UseAPI: true, Output: "jsonpath={.metadata.name}"}, []string{"anything"}, ""},
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
	o = get.Options{UseAPI: true}
	require.NoError(t, o.Complete([]string{"vm"}))
	require.ErrorIs(t, o.Run(t.Context()), get.ErrNoTransport)
}

// Complete, Validate and Run through a store: the kind's printer columns.
func TestRunStore(t *testing.T) {
	st := store.NewMemory()
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	require.NoError(t, st.Create(t.Context(), &virtkit.MigrationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fast"}}))
	var out bytes.Buffer
	o := get.Options{Out: &out, Store: st, Namespace: "default", Now: func() time.Time { return t0 }}
	require.NoError(t, o.Complete([]string{"migrationpolicies"}))
	require.NoError(t, o.Validate())
	require.NoError(t, o.Run(t.Context()))
	assert.Regexp(t, `^NAME\s+AGE\nfast\s+\S+\n$`, out.String(), "a cluster-scoped kind: no NAMESPACE column")
}

// -o wide through a store prints every column, as the API's wide table.
func TestRunStoreWide(t *testing.T) {
	st := store.NewMemory()
	require.NoError(t, st.Create(t.Context(), &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: virtkit.NodeStatus{Hypervisor: "sim"}}))
	for output, want := range map[string]string{
		"table": `^NAME\s+STATUS\s+AGE\nn1\s+NotReady\s+\S+\n$`,
		"wide":  `^NAME\s+STATUS\s+AGE\s+HYPERVISOR\s+CPU\s+MEMORY\nn1\s+NotReady\s+\S+\s+sim\s+<none>\s+<none>\n$`,
	} {
		var out bytes.Buffer
		o := get.Options{Out: &out, Store: st, Output: output}
		require.NoError(t, o.Complete([]string{"nodes"}))
		require.NoError(t, o.Validate())
		require.NoError(t, o.Run(t.Context()))
		assert.Regexp(t, want, out.String(), output)
	}
}
