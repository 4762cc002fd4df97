package promcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
