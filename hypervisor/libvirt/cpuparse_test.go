package libvirt

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return string(b)
}

func TestParseHostCPU(t *testing.T) {
	caps := readTestdata(t, "capabilities-tcg.xml")
	domCaps := readTestdata(t, "domcapabilities-tcg.xml")
	testCaps := readTestdata(t, "capabilities-test.xml")

	full, err := parseHostCPU(caps, domCaps)
	require.NoError(t, err)
	require.Equal(t, "EPYC", full.HostModel, "host-model from the domain capabilities")
	require.Equal(t, "AMD", full.Vendor)
	require.Contains(t, full.UsableModels, "qemu64")
	require.Contains(t, full.UsableModels, "EPYC", "the host model is always usable")
	require.NotContains(t, full.UsableModels, "phenom", "usable='no' is left out")
	require.Len(t, full.Signature, 16)
	require.False(t, full.Modelled)

	hostOnly, err := parseHostCPU(caps, "")
	require.NoError(t, err)
	require.Equal(t, "kvm64", hostOnly.HostModel, "without domain capabilities: the host capabilities' model")
	require.Equal(t, full.Signature, hostOnly.Signature, "the signature is the exact host CPU's")

	other, err := parseHostCPU(strings.Replace(caps, "<feature name='avx2'/>", "", 1), domCaps)
	require.NoError(t, err)
	require.NotEqual(t, full.Signature, other.Signature, "a missing feature is another CPU")

	for _, tc := range []struct {
		name         string
		caps, domCap string
		want         error
	}{
		{"test driver: no model anywhere", testCaps, "", hypervisor.ErrNotSupported},
		{"oversized", caps + strings.Repeat(" ", maxCapsXML), "", hypervisor.ErrInvalidArgument},
		{"malformed capabilities", "<capabilities><host>", "", nil},
		{"malformed domain capabilities", caps, "<domainCapabilities><cpu>", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseHostCPU(tc.caps, tc.domCap)
			require.Error(t, err)
			if tc.want != nil {
				require.True(t, errors.Is(err, tc.want), "%v", err)
			}
		})
	}
}
