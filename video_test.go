package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestVideoValidation(t *testing.T) {
	for _, tc := range []struct {
		arch, typ string
		paths     []string
	}{
		{"", "virtio", nil},
		{"amd64", "bochs", nil},
		{"amd64", "qxl", []string{"spec.domain.devices.video.type"}},
		{"arm64", "ramfb", nil},
		{"arm64", "vga", []string{"spec.domain.devices.video.type"}},
		{"s390x", "virtio", nil},
	} {
		t.Run(tc.arch+"/"+tc.typ, func(t *testing.T) {
			doc := "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: v}\nspec:\n" +
				"  domain:\n    devices:\n      disks: [{name: root, disk: {bus: virtio}}]\n      video: {type: " + tc.typ + "}\n" +
				"    resources: {requests: {memory: 128Mi}}\n" +
				"  volumes: [{name: root, containerDisk: {image: quay.io/x/y}}]\n"
			objs, err := DecodeBytes([]byte(doc))
			require.NoError(t, err)
			vmi := objs[0].(*VirtualMachineInstance)
			vmi.Spec.Architecture = tc.arch
			var paths []string
			for _, e := range Validate(vmi) {
				paths = append(paths, e.Field)
			}
			assert.Equal(t, tc.paths, paths)
		})
	}
}
