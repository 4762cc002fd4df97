package libvirt

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

// The <features> of domain capabilities as libvirt writes them on an AMD
// EPYC host with SEV, SEV-ES and SNP, on an Intel host with TDX, and on a
// host with neither.
const (
	domCapsEPYC = `<domainCapabilities><path>/usr/bin/qemu-system-x86_64</path><domain>kvm</domain><arch>x86_64</arch>
<features>
  <sev supported='yes'>
    <cbitpos>51</cbitpos>
    <reducedPhysBits>1</reducedPhysBits>
    <maxGuests>15</maxGuests>
    <maxESGuests>494</maxESGuests>
  </sev>
  <launchSecurity supported='yes'>
    <enum name='sectype'><value>sev</value><value>sev-snp</value></enum>
  </launchSecurity>
</features></domainCapabilities>`
	domCapsTDX = `<domainCapabilities><domain>kvm</domain><arch>x86_64</arch>
<features><sev supported='no'/><tdx supported='yes'/>
  <launchSecurity supported='yes'><enum name='sectype'><value>tdx</value></enum></launchSecurity>
</features></domainCapabilities>`
	domCapsPlain = `<domainCapabilities><domain>kvm</domain><arch>x86_64</arch>
<features><sev supported='no'/></features></domainCapabilities>`
)

func TestLaunchSecurityFromDomCaps(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      hypervisor.LaunchSecurity
	}{
		{"EPYC", domCapsEPYC, hypervisor.LaunchSecurity{SEV: true, SEVES: true, SNP: true, CBitPos: 51, ReducedPhysBits: 1}},
		{"TDX", domCapsTDX, hypervisor.LaunchSecurity{TDX: true}},
		{"none", domCapsPlain, hypervisor.LaunchSecurity{}},
		{"no domain capabilities", "", hypervisor.LaunchSecurity{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := launchSecurityFromDomCaps(tc.doc)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := launchSecurityFromDomCaps("<domainCapabilities>")
	assert.Error(t, err)
}
