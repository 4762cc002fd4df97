package describe

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/virtkit/virtkit"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata/describe")

// describe's output for vendored objects and events, against golden files.
func TestDescribeGolden(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 10, 0, 0, time.UTC)
	for _, tc := range []struct{ name, object, events string }{
		{"vmi", "vmi.yaml", "vmi-events.yaml"},
		{"vm", "vm.yaml", ""},
		{"vmim", "vmim.yaml", ""},
		{"dv", "dv.yaml", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join("testdata", "describe")
			data, err := os.ReadFile(filepath.Join(dir, tc.object))
			require.NoError(t, err)
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal(data, &obj.Object))
			var evs []virtkit.Event
			if tc.events != "" {
				data, err := os.ReadFile(filepath.Join(dir, tc.events))
				require.NoError(t, err)
				require.NoError(t, yaml.Unmarshal(data, &evs))
			}
			var out bytes.Buffer
			Object(&out, obj, evs, now)
			golden := filepath.Join(dir, tc.name+".golden")
			if *updateGolden {
				require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			assert.Equal(t, string(want), out.String())
		})
	}
}

func TestLabelFor(t *testing.T) {
	for in, want := range map[string]string{
		"runStrategy":             "Run Strategy",
		"apiVersion":              "API Version",
		"uid":                     "UID",
		"ipAddresses":             "IP Addresses",
		"migrationState":          "Migration State",
		"lastProbeTime":           "Last Probe Time",
		"targetNodeAddress":       "Target Node Address",
		"VMIName":                 "VMI Name",
		"guestOSInfo":             "Guest OS Info",
		"a\x1bb":                  `A\x1bb`,
		"dataVolumeTemplate":      "Data Volume Template",
		"completionTimeoutPerGiB": "Completion Timeout Per GiB",
		"http":                    "HTTP",
	} {
		assert.Equal(t, want, labelFor(in), in)
	}
}

// Events are the object's only: another object's events are left out.
func TestDescribeEventsOfObjectOnly(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
		"metadata": map[string]any{"name": "a", "namespace": "default"},
	}}
	var out bytes.Buffer
	Object(&out, obj, nil, time.Now())
	assert.True(t, strings.HasSuffix(out.String(), "Events:       <none>\n"), out.String())
}
