package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
)

func TestLiveUpdateMemoryProblem(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name        string
		edit        func(*virtkit.VirtualMachineInstanceSpec)
		guest, max  string
		wantMessage string // "" = hot-pluggable
	}{
		{name: "within maxGuest", guest: "2Gi", max: "4Gi"},
		{name: "at maxGuest", guest: "4Gi", max: "4Gi"},
		{name: "beyond maxGuest", guest: "5Gi", max: "4Gi", wantMessage: "Guest memory is greater than the configured maxGuest memory"},
		{name: "guest unaligned", guest: "1025Mi", max: "4Gi", wantMessage: "Guest memory must be 2Mi aligned"},
		{name: "maxGuest unaligned", guest: "2Gi", max: "4097Mi", wantMessage: "MaxGuest must be 2Mi aligned"},
		{name: "1Gi pages align to 1Gi", guest: "2050Mi", max: "4Gi", wantMessage: "Guest memory must be 1Gi aligned",
			edit: func(s *virtkit.VirtualMachineInstanceSpec) {
				s.Domain.Memory = &virtkit.Memory{Hugepages: &virtkit.Hugepages{PageSize: "1Gi"}}
			}},
		{name: "below 1Gi", guest: "512Mi", max: "4Gi", wantMessage: "Memory hotplug is only available for VMs with at least 1Gi of guest memory"},
		{name: "arm64", guest: "2Gi", max: "4Gi", wantMessage: "Memory hotplug is only available for x86_64 VMs",
			edit: func(s *virtkit.VirtualMachineInstanceSpec) { s.Architecture = "arm64" }},
		{name: "realtime", guest: "2Gi", max: "4Gi", wantMessage: "Memory hotplug is not compatible with realtime VMs",
			edit: func(s *virtkit.VirtualMachineInstanceSpec) {
				s.Domain.CPU = &virtkit.CPU{Realtime: &virtkit.Realtime{}}
			}},
		{name: "launch security", guest: "2Gi", max: "4Gi", wantMessage: "Memory hotplug is not compatible with encrypted VMs",
			edit: func(s *virtkit.VirtualMachineInstanceSpec) { s.Domain.LaunchSecurity = &virtkit.LaunchSecurity{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &virtkit.VirtualMachineInstanceSpec{Architecture: "amd64"}
			if tc.edit != nil {
				tc.edit(spec)
			}
			assert.Equal(t, tc.wantMessage, liveUpdateMemoryProblem(spec, q(tc.guest), q(tc.max)))
		})
	}
}

func TestNeutralizeLiveUpdatable(t *testing.T) {
	g1, g2, m4, m8 := resource.MustParse("1Gi"), resource.MustParse("2Gi"), resource.MustParse("4Gi"), resource.MustParse("8Gi")
	spec := func(sockets, maxSockets uint32, guest, maxGuest *resource.Quantity) *virtkit.VirtualMachineInstanceSpec {
		return &virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{
			CPU:    &virtkit.CPU{Sockets: sockets, Cores: 1, Threads: 1, MaxSockets: maxSockets},
			Memory: &virtkit.Memory{Guest: guest, MaxGuest: maxGuest},
		}}
	}
	for _, tc := range []struct {
		name      string
		tmpl      virtkit.DomainSpec
		want, got *virtkit.VirtualMachineInstanceSpec
		equal     bool
	}{
		{name: "sockets and the maxima derived from them", tmpl: virtkit.DomainSpec{CPU: &virtkit.CPU{Sockets: 2}, Memory: &virtkit.Memory{Guest: &g2}},
			want: spec(2, 8, &g2, &m8), got: spec(1, 4, &g1, &m4), equal: true},
		{name: "an explicit maxSockets is not live-updatable", tmpl: virtkit.DomainSpec{CPU: &virtkit.CPU{Sockets: 2, MaxSockets: 8}},
			want: spec(2, 8, &g1, &m4), got: spec(1, 4, &g1, &m4)},
		{name: "a template without cpu leaves sockets alone", tmpl: virtkit.DomainSpec{},
			want: spec(2, 4, &g1, &m4), got: spec(1, 4, &g1, &m4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			neutralizeLiveUpdatable(&tc.tmpl, tc.want, tc.got)
			assert.Equal(t, tc.equal, assert.ObjectsAreEqual(tc.want, tc.got))
		})
	}
}
