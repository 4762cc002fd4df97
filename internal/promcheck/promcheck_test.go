package promcheck

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFilter(t *testing.T) {
	expo := []byte(`# TYPE kubevirt_vmi_memory_resident_bytes gauge
kubevirt_vmi_memory_resident_bytes{kubernetes_vmi_label_kubevirt_io_nodeName="n1",name="a\",b{=\"",namespace="ns"} 1
# TYPE x_bytes gauge
x_bytes{fooBar="1"} 1
# TYPE kubevirt_vm_labels gauge
kubevirt_vm_labels{label_app_kubernetes_io_managedBy="x",name="vm"} 1
`)
	tests := []struct {
		name     string
		findings []string
		want     []string
	}{
		{"KubeVirt counter without _total", []string{"kubevirt_vm_running_status_last_transition_timestamp_seconds " + msgTotal}, nil},
		{"other counter without _total", []string{"virtkit_foo " + msgTotal}, []string{"virtkit_foo " + msgTotal}},
		{"copied VMI label key", []string{"kubevirt_vmi_memory_resident_bytes " + msgCamel}, nil},
		{"copied VM label key", []string{"kubevirt_vm_labels " + msgCamel}, nil},
		{"own camelCase label", []string{"x_bytes " + msgCamel}, []string{"x_bytes " + msgCamel}},
		{"any other finding", []string{"x_bytes metric names should not contain abbreviated units"}, []string{"x_bytes metric names should not contain abbreviated units"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { assert.Equal(t, tt.want, Filter(expo, tt.findings)) })
	}
}

func TestLabelNames(t *testing.T) {
	assert.Equal(t, []string{"a", "b", "c"}, labelNames(`a="x\",y",b="}{=",c=""}`))
}

func TestCompare(t *testing.T) {
	fams, err := ParseFamilies(strings.NewReader(`# comment
a_total counter node,name,+vmi
b gauge -
c_seconds histogram phase
d gauge ?
e gauge x
f gauge name
`))
	require.NoError(t, err)
	expo := []byte(`# TYPE a_total counter
a_total{kubernetes_vmi_label_app="x",name="n",node="n1"} 1
# TYPE b gauge
b 1
# TYPE c_seconds histogram
c_seconds_bucket{phase="Running",le="+Inf"} 1
c_seconds_sum{phase="Running"} 1
c_seconds_count{phase="Running"} 1
# TYPE d counter
d{z="1"} 1
# TYPE f gauge
f{name="x",node="y"} 1
`)
	r := Compare(fams, expo, nil)
	assert.Equal(t, []string{"a_total", "b", "c_seconds"}, r.Served)
	assert.Equal(t, []string{"e"}, r.Missing)
	assert.Equal(t, []string{"d: type counter, want gauge", `f: a series has label "node", which KubeVirt's has not`}, r.Mismatched)
	assert.Equal(t, []string{"a_total", "b", "c_seconds", "f"}, Compare(fams, expo, map[string][]string{"f": {"node"}}).Served)

	_, err = ParseFamilies(strings.NewReader("x wrongtype -\n"))
	assert.Error(t, err)
}
