package node

import (
	"encoding/base64"
	"fmt"
	"maps"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
)

// guestConfig is what a hypervisor modelling the guest's services
// (hypervisor.GuestConfigurer) learns of the VMI: its annotations and the
// user-data of its cloud-init volume, inline or base64. User-data behind a
// secretRef is not read here.
func guestConfig(vmi *virtkit.VirtualMachineInstance) (hypervisor.GuestConfig, error) {
	cfg := hypervisor.GuestConfig{Annotations: maps.Clone(vmi.Annotations)}
	for i, v := range vmi.Spec.Volumes {
		var inline, b64, field string
		switch {
		case v.CloudInitNoCloud != nil:
			inline, b64, field = v.CloudInitNoCloud.UserData, v.CloudInitNoCloud.UserDataBase64, "cloudInitNoCloud"
		case v.CloudInitConfigDrive != nil:
			inline, b64, field = v.CloudInitConfigDrive.UserData, v.CloudInitConfigDrive.UserDataBase64, "cloudInitConfigDrive"
		default:
			continue
		}
		cfg.UserData = inline
		if inline == "" && b64 != "" {
			b, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				return cfg, fmt.Errorf("spec.volumes[%d].%s.userDataBase64: %w", i, field, err)
			}
			cfg.UserData = string(b)
		}
		break
	}
	return cfg, nil
}
