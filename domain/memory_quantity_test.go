package domain_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

// Guest memory of 1.5Gi is 1610612736 bytes, as Kubernetes and KubeVirt
// read it; a fractional byte count is refused.
func TestBuildFractionalMemoryQuantity(t *testing.T) {
	for _, tc := range []struct {
		guest string
		bytes uint
	}{{"1.5Gi", 1610612736}, {"0.5Gi", 536870912}, {"1.5", 0}} {
		t.Run(tc.guest, func(t *testing.T) {
			objs, err := virtkit.Decode(strings.NewReader(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: m, namespace: default}
spec:
  domain:
    memory: {guest: "` + tc.guest + `"}
    devices: {}
`))
			require.NoError(t, err)
			vmi := objs[0].(*virtkit.VirtualMachineInstance)
			virtkit.SetDefaults(vmi)
			dom, err := domain.Build(vmi, domain.Options{})
			if tc.bytes == 0 {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "not a whole number of bytes")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.bytes, dom.Memory.Value)
			assert.Equal(t, "b", dom.Memory.Unit)
		})
	}
}
