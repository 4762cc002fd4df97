package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestSetDefaultsMemoryOvercommit(t *testing.T) {
	for _, tc := range []struct {
		name       string
		overcommit int
		guest      string
		request    string // "" = none set
		want       string // "" = no request afterwards
	}{
		{"default adds no request", 0, "1Gi", "", ""},
		{"100 adds no request", 100, "1Gi", "", ""},
		{"150 lowers the request", 150, "3Gi", "", "2Gi"},
		{"200 halves it", 200, "1Gi", "", "512Mi"},
		{"below 100 raises it", 50, "1Gi", "", "2Gi"},
		{"an explicit request is kept", 200, "1Gi", "768Mi", "768Mi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := &VirtualMachineInstance{}
			vmi.Name, vmi.Namespace = "a", "default"
			g := resource.MustParse(tc.guest)
			vmi.Spec.Domain.Memory = &Memory{Guest: &g}
			if tc.request != "" {
				vmi.Spec.Domain.Resources.Requests = ResourceList{ResourceMemory: resource.MustParse(tc.request)}
			}
			DefaultOptions{MemoryOvercommit: tc.overcommit}.SetDefaults(vmi)
			q, ok := vmi.Spec.Domain.Resources.Requests[ResourceMemory]
			if tc.want == "" {
				assert.False(t, ok, "no memory request expected, got %s", q.String())
				return
			}
			want := resource.MustParse(tc.want)
			assert.True(t, ok)
			assert.Equal(t, want.Value(), q.Value())
			assert.Equal(t, g.Value(), vmi.Spec.Domain.Memory.Guest.Value(), "the guest keeps its memory")
		})
	}
}
