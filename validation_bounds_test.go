package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateCPUTopologyBounds(t *testing.T) {
	cpu := "spec.domain.cpu"
	for _, tc := range []struct {
		name                             string
		sockets, cores, threads, maxSock uint32
		want                             []wantFieldError
	}{
		{"ordinary", 2, 2, 1, 0, nil},
		{"exactly the maximum", 16, 16, 16, 0, nil},
		{"hotplug room within bounds", 2, 8, 2, 128, nil},
		{"product wraps to zero in 32 bits", 2097152, 4194304, 2097152, 0, []wantFieldError{
			{cpu + ".sockets", field.ErrorTypeInvalid}, {cpu + ".cores", field.ErrorTypeInvalid}, {cpu + ".threads", field.ErrorTypeInvalid},
		}},
		{"65535 cubed", 65535, 65535, 65535, 0, []wantFieldError{
			{cpu + ".sockets", field.ErrorTypeInvalid}, {cpu + ".cores", field.ErrorTypeInvalid}, {cpu + ".threads", field.ErrorTypeInvalid},
		}},
		{"uint32 max", 4294967295, 1, 1, 0, []wantFieldError{{cpu + ".sockets", field.ErrorTypeInvalid}}},
		{"factors fine, product too big", 64, 64, 2, 0, []wantFieldError{{cpu, field.ErrorTypeInvalid}}},
		{"maxSockets product too big", 2, 64, 2, 64, []wantFieldError{{cpu + ".maxSockets", field.ErrorTypeInvalid}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := validVMI(t)
			vmi.Spec.Domain.CPU = &CPU{Sockets: tc.sockets, Cores: tc.cores, Threads: tc.threads, MaxSockets: tc.maxSock}
			assertFieldErrors(t, Validate(vmi), tc.want)
		})
	}
}

func TestValidateQuantityRange(t *testing.T) {
	mem := "spec.domain.memory"
	for _, tc := range []struct {
		name, guest string
		want        []wantFieldError
		detail      string
	}{
		{"fits", "8Gi", nil, ""},
		{"overflows int64", "100Ei", []wantFieldError{{mem + ".guest", field.ErrorTypeInvalid}}, "too large"},
		{"fraction of a byte", "1536001m", []wantFieldError{{mem + ".guest", field.ErrorTypeInvalid}}, "whole number of bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := validVMI(t)
			vmi.Spec.Domain.Resources = ResourceRequirements{}
			vmi.Spec.Domain.Memory = &Memory{Guest: ptrTo(resource.MustParse(tc.guest))}
			errs := Validate(vmi)
			assertFieldErrors(t, errs, tc.want)
			if tc.detail != "" {
				assert.Contains(t, errs[0].Detail, tc.detail)
			}
		})
	}
	vmi := validVMI(t)
	vmi.Spec.Domain.Resources.Limits = ResourceList{ResourceCPU: resource.MustParse("100E")}
	assertFieldErrors(t, Validate(vmi), []wantFieldError{{"spec.domain.resources.limits.cpu", field.ErrorTypeInvalid}})
}

// Memory quantities are read as Kubernetes reads them: any quantity that
// is a whole number of bytes, fractional mantissas included; the overflow
// bound stays.
func TestQuantityBytes(t *testing.T) {
	tests := []struct {
		q    string
		want int64
		ok   bool
	}{
		{"1.5Gi", 1610612736, true},
		{"1.5Ki", 1536, true},
		{"0.5Mi", 524288, true},
		{"1.25G", 1250000000, true},
		{"128Mi", 128 << 20, true},
		{"1e3", 1000, true},
		{"12345678901234", 12345678901234, true},
		{"1.5", 0, false},
		{"100m", 0, false},
		{"1.0000000001Ki", 0, false},
		{"-1Mi", 0, false},
		{"8Ei", 0, false},
		{"9Ei", 0, false},
		{"7.5Ei", 8646911284551352320, true},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			got, ok := QuantityBytes(resource.MustParse(tt.q))
			assert.Equal(t, tt.ok, ok)
			if tt.ok {
				assert.Equal(t, tt.want, got)
			}
		})
	}
}

// A VMI asking for 1.5Gi of memory validates, as in KubeVirt; a
// fractional byte count and an overflow do not.
func TestValidateFractionalMemory(t *testing.T) {
	for _, tc := range []struct {
		mem string
		ok  bool
	}{{"1.5Gi", true}, {"1.5Mi", true}, {"1.5", false}, {"9Ei", false}} {
		t.Run(tc.mem, func(t *testing.T) {
			vmi := validVMI(t)
			q := resource.MustParse(tc.mem)
			vmi.Spec.Domain.Memory = &Memory{Guest: &q}
			vmi.Spec.Domain.Resources.Requests = ResourceList{ResourceMemory: q}
			vmi.Spec.Domain.Resources.Limits = nil
			errs := Validate(vmi)
			if tc.ok {
				assert.Empty(t, errs)
				return
			}
			assert.NotEmpty(t, errs)
		})
	}
}
