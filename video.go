package virtkit

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// VideoDevice chooses the model of the graphics device (KubeVirt's
// devices.video); without it the domain builder picks KubeVirt's default
// (VGA with BIOS, bochs with EFI, virtio off amd64).
type VideoDevice struct {
	// Type is the model: vga, cirrus, virtio, ramfb or bochs on amd64;
	// virtio or ramfb on arm64; virtio on s390x.
	Type string `json:"type"`
}

// videoTypes are the models KubeVirt admits per architecture.
var videoTypes = map[string][]string{
	"amd64": {"vga", "cirrus", "virtio", "ramfb", "bochs"},
	"arm64": {"virtio", "ramfb"},
	"s390x": {"virtio"},
}

// video checks devices.video as KubeVirt's per-architecture admitters do.
func (v *vmiValidator) video() {
	d := v.spec.Domain.Devices.Video
	if d == nil {
		return
	}
	arch := v.spec.Architecture
	if arch == "" {
		arch = "amd64"
	}
	allowed, ok := videoTypes[arch]
	if ok && !slices.Contains(allowed, d.Type) {
		v.add(field.NotSupported(v.sp.Child("domain", "devices", "video", "type"), d.Type, allowed))
	}
}
