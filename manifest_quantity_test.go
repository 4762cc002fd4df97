package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A quantity with a huge decimal exponent is refused before apimachinery
// spends minutes rounding it; ordinary exponents still decode.
func TestDecodeQuantityExponentBounded(t *testing.T) {
	for _, tc := range []struct {
		guest string
		ok    bool
	}{
		{`"1e-999999999"`, false},
		{`"1E+99999"`, false},
		{`"128Mi"`, true},
		{`"1e8"`, true},
		{`"1E"`, true}, // exa, not an exponent
	} {
		t.Run(tc.guest, func(t *testing.T) {
			doc := `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"q"},` +
				`"spec":{"domain":{"devices":{},"memory":{"guest":` + tc.guest + `}}}}`
			_, err := DecodeBytes([]byte(doc))
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), "spec.domain.memory.guest")
		})
	}
}
