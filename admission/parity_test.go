package admission_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
	"github.com/virtkit/virtkit/store"
)

// The manifests in testdata/parity are refused by every caller of the
// chain (cluster.Apply, the API server, virtkit validate) with the same
// field errors; this pins what the chain itself says about each, so the
// callers' tests cannot agree on nothing.
func TestParityManifests(t *testing.T) {
	tests := []struct {
		file   string
		fields []string
	}{
		{"vmi-reserved-label-and-bad-disk.yaml", []string{"spec.domain.devices.disks[0].name", "metadata.labels[kubevirt.io/nodeName]"}},
		{"vm-instancetype-conflict.yaml", []string{"spec.template.spec.domain.cpu.sockets"}},
		{"vm-inferred-conflict.yaml", []string{"spec.template.spec.domain.memory.guest"}},
		{"vm-missing-instancetype.yaml", []string{"spec.instancetype.name"}},
	}
	ctx := context.Background()
	st := store.NewMemory()
	catalogue, err := virtkit.CommonInstancetypes()
	require.NoError(t, err)
	for _, o := range catalogue {
		require.NoError(t, st.Create(ctx, o))
	}
	chain := admission.New(admission.Options{Lookup: st})
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "parity", tt.file))
			require.NoError(t, err)
			obj := decodeOne(string(b))
			err = chain.Admit(ctx, admission.AttributesFor(admission.Create, obj, nil))
			require.ErrorIs(t, err, admission.ErrInvalid)
			var got []string
			for _, e := range admission.FieldErrors(err) {
				got = append(got, e.Field)
			}
			assert.Equal(t, tt.fields, got)
		})
	}
}
