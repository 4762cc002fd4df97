package domain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
)

func TestBuildWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name, arch, action string
		want               string // the error, or the action written
	}{
		{name: "poweroff", action: "poweroff", want: "poweroff"},
		{name: "defaulted", want: "reset"},
		{name: "arm64", arch: "arm64", action: "reset", want: "spec.domain.devices.watchdog.i6300esb: the i6300esb watchdog is an x86_64 (q35) device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := decodeVMI(t, "testdata/vmi/watchdog.yaml")
			vmi.Spec.Domain.Devices.Watchdog.I6300ESB.Action = virtkit.WatchdogAction(tc.action)
			vmi.Spec.Architecture = tc.arch
			virtkit.SetDefaults(vmi)
			dom, err := domain.Build(vmi, domain.Options{})
			if tc.arch != "" {
				require.ErrorIs(t, err, domain.ErrUnsupported)
				assert.Contains(t, err.Error(), tc.want)
				return
			}
			require.NoError(t, err)
			require.Len(t, dom.Devices.Watchdogs, 1)
			assert.Equal(t, "i6300esb", dom.Devices.Watchdogs[0].Model)
			assert.Equal(t, tc.want, dom.Devices.Watchdogs[0].Action)
			assert.Equal(t, "ua-wd", dom.Devices.Watchdogs[0].Alias.Name)
		})
	}
}
