package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const nadManifest = `apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata:
  name: vlan-net
  namespace: default
spec:
  config: '{"cniVersion":"0.3.1","name":"vlan-net","type":"bridge","bridge":"br10","vlan":10,"ipam":{"type":"host-local","subnet":"192.168.10.0/24","rangeStart":"192.168.10.10","rangeEnd":"192.168.10.50","gateway":"192.168.10.1"}}'
`

func TestNetworkAttachmentDefinitionDecode(t *testing.T) {
	objs, err := DecodeBytes([]byte(nadManifest))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	nad, ok := objs[0].(*NetworkAttachmentDefinition)
	require.True(t, ok)
	assert.Empty(t, Validate(nad))
	cfg, errs := ParseCNIConfig(nad.Spec.Config, field.NewPath("spec", "config"))
	require.Empty(t, errs)
	assert.Equal(t, "bridge", cfg.Type)
	assert.Equal(t, "br10", cfg.Bridge)
	assert.Equal(t, 10, cfg.VLAN)
	assert.Equal(t, "192.168.10.10", cfg.IPAM.RangeStart)

	_, err = DecodeBytes([]byte(nadManifest + "  extra: 1\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.extra")
}

func TestParseCNIConfig(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		path         string // "" = valid
		typ          field.ErrorType
	}{
		{"bridge", `{"type":"bridge","bridge":"br1"}`, "", ""},
		{"ranges", `{"type":"bridge","bridge":"br1","ipam":{"type":"host-local","ranges":[[{"subnet":"10.9.0.0/24","gateway":"10.9.0.1"}]]}}`, "", ""},
		{"other type parses", `{"type":"macvlan","master":"eth0"}`, "", ""},
		{"empty", ``, "spec.config", field.ErrorTypeRequired},
		{"not json", `{`, "spec.config", field.ErrorTypeInvalid},
		{"no type", `{"bridge":"br1"}`, "spec.config.type", field.ErrorTypeRequired},
		{"plugin list", `{"type":"x","plugins":[]}`, "spec.config.plugins", field.ErrorTypeNotSupported},
		{"unknown bridge field", `{"type":"bridge","bridge":"br1","promiscMode":true}`, "spec.config.promiscMode", field.ErrorTypeNotSupported},
		{"vlan range", `{"type":"bridge","vlan":5000}`, "spec.config.vlan", field.ErrorTypeInvalid},
		{"vlan trunk", `{"type":"bridge","bridge":"br1","vlanTrunk":[{"minID":100,"maxID":120}]}`, "spec.config.vlanTrunk", field.ErrorTypeForbidden},
		{"vlan trunk with vlan", `{"type":"bridge","bridge":"br1","vlan":100,"vlanTrunk":[{"id":200}]}`, "spec.config.vlanTrunk", field.ErrorTypeForbidden},
		{"preserve default vlan", `{"type":"bridge","bridge":"br1","vlan":100,"preserveDefaultVlan":true}`, "spec.config.preserveDefaultVlan", field.ErrorTypeNotSupported},
		{"preserve default vlan false", `{"type":"bridge","bridge":"br1","vlan":100,"preserveDefaultVlan":false}`, "", ""},
		{"preserve default vlan without vlan", `{"type":"bridge","bridge":"br1","preserveDefaultVlan":true}`, "", ""},
		{"preserve default vlan not bool", `{"type":"bridge","bridge":"br1","vlan":100,"preserveDefaultVlan":"yes"}`, "spec.config.preserveDefaultVlan", field.ErrorTypeInvalid},
		{"bad bridge name", `{"type":"bridge","bridge":"a-very-long-bridge-name"}`, "spec.config.bridge", field.ErrorTypeInvalid},
		{"ipam type", `{"type":"bridge","ipam":{"type":"dhcp"}}`, "spec.config.ipam.type", field.ErrorTypeNotSupported},
		{"ipam no subnet", `{"type":"bridge","ipam":{"type":"host-local"}}`, "spec.config.ipam.subnet", field.ErrorTypeRequired},
		{"gateway outside", `{"type":"bridge","ipam":{"type":"host-local","subnet":"10.0.0.0/24","gateway":"10.1.0.1"}}`, "spec.config.ipam.gateway", field.ErrorTypeInvalid},
		{"range subnet", `{"type":"bridge","ipam":{"type":"host-local","ranges":[[{"subnet":"x"}]]}}`, "spec.config.ipam.ranges[0][0].subnet", field.ErrorTypeInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := ParseCNIConfig(tc.config, field.NewPath("spec", "config"))
			if tc.path == "" {
				assert.Empty(t, errs)
				return
			}
			require.NotEmpty(t, errs)
			assert.Equal(t, tc.path, errs[0].Field)
			assert.Equal(t, tc.typ, errs[0].Type)
		})
	}
}

func TestValidateIPLease(t *testing.T) {
	l := &IPLease{}
	l.Name = "pod-10-244-0-5"
	l.Spec = IPLeaseSpec{Pool: "pod", Address: "10.244.0.5/24"}
	assert.Empty(t, Validate(l))
	l.Spec.Address = "10.244.0.5"
	errs := Validate(l)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.address", errs[0].Field)
}
