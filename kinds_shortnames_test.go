package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestShortNames(t *testing.T) {
	for _, tc := range []struct {
		kind string
		want []string
	}{
		{KindVirtualMachine, []string{"vm", "vms"}},
		{KindKubeVirt, []string{"kv", "kvs"}},
		{KindVirtualMachineSnapshot, []string{"vmsnapshot", "vmsnapshots"}},
		{KindVirtualMachineClusterPreference, []string{"vmcp", "vmcps"}},
		{KindNode, nil},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			assert.Equal(t, tc.want, ShortNames(tc.kind))
		})
	}
}

// No two kinds claim one short name, or kubectl could not resolve it.
func TestShortNamesUnique(t *testing.T) {
	owner := map[string]string{}
	for _, k := range KnownKinds() {
		for _, n := range ShortNames(k.Kind) {
			if prev, ok := owner[n]; ok {
				t.Errorf("short name %q of %s is also %s's", n, k.Kind, prev)
			}
			owner[n] = k.Kind
		}
	}
	assert.NotEmpty(t, owner)
}
