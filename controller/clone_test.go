package controller_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/controller"
)

func TestCloneTargetName(t *testing.T) {
	a := controller.CloneTargetName("db", "uid-1")
	assert.True(t, strings.HasPrefix(a, "db-clone-"), a)
	assert.Len(t, a, len("db-clone-")+5)
	assert.Equal(t, a, controller.CloneTargetName("db", "uid-1"), "the same clone always gets the same name")
	assert.NotEqual(t, a, controller.CloneTargetName("db", "uid-2"))
	long := controller.CloneTargetName(strings.Repeat("a", 250), "uid-1")
	assert.True(t, strings.HasPrefix(long, "clone-object-"), long)
}

func TestCloneTargetVM(t *testing.T) {
	src := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "src",
		Labels:      map[string]string{"app": "a", "secret": "s"},
		Annotations: map[string]string{"note": "n", virtkit.LastRestoreUIDAnnotation: "old"}},
		Spec: virtkit.VirtualMachineSpec{Template: &virtkit.VirtualMachineInstanceTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"t": "1"}, Annotations: map[string]string{"ta": "2"}},
			Spec: virtkit.VirtualMachineInstanceSpec{Domain: virtkit.DomainSpec{
				Firmware: &virtkit.Firmware{UUID: "u", Serial: "s1"},
				Devices: virtkit.Devices{Interfaces: []virtkit.Interface{
					{Name: "a", MacAddress: "02:00:00:00:00:01"}, {Name: "b", MacAddress: "02:00:00:00:00:02"}}},
			}}}}}
	serial := "s2"
	tests := []struct {
		name     string
		spec     virtkit.VirtualMachineCloneSpec
		labels   map[string]string
		annots   map[string]string
		tmplLbls map[string]string
		macs     []string
		serial   string
	}{
		{"no filters copy everything; MACs and serial are not copied",
			virtkit.VirtualMachineCloneSpec{},
			map[string]string{"app": "a", "secret": "s"}, map[string]string{"note": "n", virtkit.LastRestoreUIDAnnotation: "mark"},
			map[string]string{"t": "1"}, []string{"", ""}, "clone-uid"},
		{"filters, a new MAC for one interface and a serial",
			virtkit.VirtualMachineCloneSpec{LabelFilters: []string{"*", "!secret"}, AnnotationFilters: []string{"!*"},
				Template:        virtkit.VirtualMachineCloneTemplateFilters{LabelFilters: []string{"x"}},
				NewMacAddresses: map[string]string{"b": "02:00:00:00:00:0b"}, NewSMBiosSerial: &serial},
			map[string]string{"app": "a"}, map[string]string{virtkit.LastRestoreUIDAnnotation: "mark"},
			nil, []string{"", "02:00:00:00:00:0b"}, "s2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := src.DeepCopy()
			target.Name = "dst"
			target.Annotations = map[string]string{virtkit.LastRestoreUIDAnnotation: "mark"}
			cl := &virtkit.VirtualMachineClone{ObjectMeta: metav1.ObjectMeta{UID: "clone-uid"}, Spec: tt.spec}
			controller.CloneTargetVM(cl, src, target)
			assert.Equal(t, tt.labels, target.Labels)
			assert.Equal(t, tt.annots, target.Annotations)
			assert.Equal(t, tt.tmplLbls, target.Spec.Template.ObjectMeta.Labels)
			d := target.Spec.Template.Spec.Domain
			assert.Equal(t, tt.macs, []string{d.Devices.Interfaces[0].MacAddress, d.Devices.Interfaces[1].MacAddress})
			assert.Equal(t, tt.serial, d.Firmware.Serial)
			assert.Equal(t, virtkit.FirmwareUUIDForVM("dst"), d.Firmware.UUID)
		})
	}
}
