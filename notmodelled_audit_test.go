package virtkit

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNotModelledAudit lists the KubeVirt features virtkit refuses: each is
// a NotSupported decode error at the field's path that says why.
func TestNotModelledAudit(t *testing.T) {
	for _, tc := range []struct {
		feature string
		// yaml is inserted into a minimal VMI at the place its path names.
		spec, domain, devices, volume, iface string
		path, why                            string
	}{
		{feature: "s390x watchdog", devices: "watchdog: {name: w, diag288: {action: poweroff}}",
			path: "spec.domain.devices.watchdog.diag288", why: "i6300esb"},
		{feature: "VSOCK", devices: "autoattachVSOCK: true",
			path: "spec.domain.devices.autoattachVSOCK", why: "vhost-vsock"},
	} {
		t.Run(tc.feature, func(t *testing.T) {
			doc := "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: audit}\nspec:\n" +
				"  domain:\n    " + tc.domain + "\n    devices:\n      " + tc.devices + "\n" +
				"      interfaces: [{name: default, masquerade: {}" + brace(tc.iface) + "}]\n" +
				"  networks: [{name: default, pod: {}}]\n" +
				"  volumes:\n  - {name: root, containerDisk: {image: quay.io/x/y}}\n"
			if tc.volume != "" {
				doc += "  - {name: extra, " + tc.volume + "}\n"
			}
			_, err := DecodeBytes([]byte(doc))
			require.Error(t, err, doc)
			assert.True(t, errors.Is(err, ErrNotSupported), "%v", err)
			var de *DecodeError
			require.True(t, errors.As(err, &de), "%v", err)
			assert.Equal(t, tc.path, de.Path)
			assert.True(t, strings.Contains(err.Error(), tc.why), "%v does not say why (%q)", err, tc.why)
		})
	}
}

func brace(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}
