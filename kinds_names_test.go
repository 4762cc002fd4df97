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

func TestNamesOf(t *testing.T) {
	assert.Equal(t, KindNames{Kind: KindVirtualMachineInstance, Plural: "virtualmachineinstances", Singular: "virtualmachineinstance",
		ShortNames: []string{"vmi", "vmis"}, Categories: []string{"all"}}, NamesOf(KindVirtualMachineInstance))
	assert.Equal(t, "virtualmachineinstancemigrations", NamesOf(KindVirtualMachineInstanceMigration).Plural)
	assert.Equal(t, "kubevirts", NamesOf(KindKubeVirt).Plural)
	assert.Equal(t, "virtualmachinepolicies", pluralOf("virtualmachinepolicy"))
	assert.Equal(t, "keys", pluralOf("key"))
	assert.Equal(t, "statuses", pluralOf("status"))
	assert.Nil(t, NamesOf(KindNode).Categories)
	assert.Nil(t, NamesOf(KindEvent).Categories)
}

func TestKindForName(t *testing.T) {
	for _, typed := range []string{"vms", "VM", "virtualmachine", "VirtualMachines"} {
		gvk, ok := KindForName(typed)
		assert.True(t, ok, typed)
		assert.Equal(t, KindVirtualMachine, gvk.Kind, typed)
	}
	gvk, ok := KindForName("dv")
	assert.True(t, ok)
	assert.Equal(t, CDISchemeGroupVersion.WithKind(KindDataVolume), gvk)
	_, ok = KindForName("pods")
	assert.False(t, ok)
}

// Every name a user may type resolves to one kind.
func TestKindNamesUnique(t *testing.T) {
	owner := map[string]string{}
	for _, k := range KnownKinds() {
		for _, n := range NamesOf(k.Kind).Names() {
			if prev, ok := owner[n]; ok && prev != k.Kind {
				t.Errorf("name %q of %s is also %s's", n, k.Kind, prev)
			}
			owner[n] = k.Kind
		}
	}
}
