package drain

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Validate refuses a negative timeout and an unknown strategy; Complete
// takes one node.
func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		o       Options
		args    []string
		wantErr string
	}{
		{name: "ok", o: Options{DefaultEvictionStrategy: "LiveMigrate", Timeout: time.Second}, args: []string{"n1"}},
		{name: "negative timeout", o: Options{Timeout: -time.Second}, args: []string{"n1"}, wantErr: "--timeout: -1s is negative"},
		{name: "bad strategy", o: Options{DefaultEvictionStrategy: "Kill"}, args: []string{"n1"}, wantErr: `--default-eviction-strategy: want None, LiveMigrate, LiveMigrateIfPossible or External, got "Kill"`},
		{name: "no node", args: nil, wantErr: "accepts 1 arg(s), received 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			err := o.Complete(tt.args)
			if err == nil {
				err = o.Validate()
			}
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "n1", o.Node)
			assert.ErrorIs(t, o.Run(t.Context()), ErrNoStore)
		})
	}
}

// cordon and uncordon flip spec.unschedulable through the store; an
// unknown node is the store's NotFound.
func TestCordonOptionsRun(t *testing.T) {
	st := store.NewMemory()
	require.NoError(t, st.Create(t.Context(), &virtkit.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}))
	schedulable := func() bool {
		n := &virtkit.Node{}
		require.NoError(t, st.Get(t.Context(), store.Key{Name: "n1"}, n))
		return !n.Spec.Unschedulable
	}
	for _, uncordon := range []bool{false, true} {
		var out bytes.Buffer
		o := &CordonOptions{Out: &out, Uncordon: uncordon, Store: st}
		require.NoError(t, o.Complete([]string{"n1"}))
		require.NoError(t, o.Validate())
		require.NoError(t, o.Run(t.Context()))
		assert.Equal(t, uncordon, schedulable())
		want := "node/n1 cordoned\n"
		if uncordon {
			want = "node/n1 uncordoned\n"
		}
		assert.Equal(t, want, out.String())
	}
	o := &CordonOptions{Out: &bytes.Buffer{}, Node: "nope", Store: st}
	assert.ErrorIs(t, o.Run(t.Context()), store.ErrNotFound)
}
