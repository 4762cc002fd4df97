package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWatchdogValidation(t *testing.T) {
	for _, tc := range []struct {
		name, watchdog string
		paths          []string
		action         WatchdogAction
	}{
		{name: "poweroff", watchdog: "{name: wd, i6300esb: {action: poweroff}}", action: WatchdogActionPoweroff},
		{name: "defaulted to reset", watchdog: "{name: wd, i6300esb: {}}", action: WatchdogActionReset},
		{name: "bad action", watchdog: "{name: wd, i6300esb: {action: explode}}", paths: []string{"spec.domain.devices.watchdog.i6300esb.action"}},
		{name: "no type", watchdog: "{name: wd}", paths: []string{"spec.domain.devices.watchdog"}},
		{name: "no name", watchdog: "{i6300esb: {}}", paths: []string{"spec.domain.devices.watchdog.name"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: wd}\nspec:\n" +
				"  domain:\n    devices:\n      disks: [{name: root, disk: {bus: virtio}}]\n      watchdog: " + tc.watchdog + "\n" +
				"    resources: {requests: {memory: 128Mi}}\n" +
				"  volumes: [{name: root, containerDisk: {image: quay.io/x/y}}]\n"
			objs, err := DecodeBytes([]byte(doc))
			require.NoError(t, err)
			vmi := objs[0].(*VirtualMachineInstance)
			SetDefaults(vmi)
			var paths []string
			for _, e := range Validate(vmi) {
				paths = append(paths, e.Field)
			}
			assert.Equal(t, tc.paths, paths)
			if tc.action != "" {
				assert.Equal(t, tc.action, vmi.Spec.Domain.Devices.Watchdog.I6300ESB.Action)
			}
		})
	}
}
