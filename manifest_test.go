package virtkit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
)

const minimalVMI = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: a
  namespace: ns
spec:
  domain:
    devices: {}
    memory:
      guest: 128Mi
`

func decodeErrors(t *testing.T, err error) []*DecodeError {
	t.Helper()
	var out []*DecodeError
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			var de *DecodeError
			require.ErrorAs(t, e, &de)
			out = append(out, de)
		}
		return out
	}
	var de *DecodeError
	require.ErrorAs(t, err, &de)
	return []*DecodeError{de}
}

func TestDecodeStrict(t *testing.T) {
	type wantErr struct {
		doc  int
		path string
		err  error
	}
	tests := []struct {
		name      string
		input     string
		wantKinds []string
		wantErrs  []wantErr
	}{
		{
			name:      "one VMI",
			input:     minimalVMI,
			wantKinds: []string{KindVirtualMachineInstance},
		},
		{
			name: "unknown field deep in a VM template",
			input: `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm}
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        devices:
          autoattachVSOCK: true
`,
			wantErrs: []wantErr{{0, "spec.template.spec.domain.devices.autoattachVSOCK", ErrUnknownField}},
		},
		{
			name: "unknown field inside a list element",
			input: `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: a}
spec:
  domain:
    devices:
      disks:
      - name: ok
      - name: bad
        disk: {bus: virtio, bogus: 1}
`,
			wantErrs: []wantErr{{0, "spec.domain.devices.disks[1].disk.bogus", ErrUnknownField}},
		},
		{
			name:     "unknown kind",
			input:    "apiVersion: kubevirt.io/v1\nkind: VirtualMachinePool\nmetadata: {name: p}\n",
			wantErrs: []wantErr{{0, "kind", ErrUnknownKind}},
		},
		{
			name:     "known kind, wrong group",
			input:    "apiVersion: kubevirt.io/v2\nkind: VirtualMachine\nmetadata: {name: p}\n",
			wantErrs: []wantErr{{0, "kind", ErrUnknownKind}},
		},
		{
			name:     "missing kind",
			input:    "apiVersion: kubevirt.io/v1\nmetadata: {name: p}\n",
			wantErrs: []wantErr{{0, "kind", ErrInvalidManifest}},
		},
		{
			name:     "wrong type names the path",
			input:    strings.Replace(minimalVMI, "devices: {}", "devices: {}\n    cpu: {cores: two}", 1),
			wantErrs: []wantErr{{0, "spec.domain.cpu.cores", ErrInvalidManifest}},
		},
		{
			name:     "negative unsigned",
			input:    strings.Replace(minimalVMI, "devices: {}", "devices: {}\n    cpu: {sockets: -1}", 1),
			wantErrs: []wantErr{{0, "spec.domain.cpu.sockets", ErrInvalidManifest}},
		},
		{
			name:     "bad quantity",
			input:    strings.Replace(minimalVMI, "128Mi", "lots", 1),
			wantErrs: []wantErr{{0, "spec.domain.memory.guest", ErrInvalidManifest}},
		},
		{
			name:     "bad quantity in a resource list",
			input:    strings.Replace(minimalVMI, "devices: {}", "devices: {}\n    resources: {requests: {memory: x}}", 1),
			wantErrs: []wantErr{{0, "spec.domain.resources.requests[memory]", ErrInvalidManifest}},
		},
		{
			name:     "duplicate key",
			input:    minimalVMI + "spec: {}\n",
			wantErrs: []wantErr{{0, "", ErrInvalidManifest}},
		},
		{
			name:      "multi-document with one bad document keeps the good ones",
			input:     "---\n# comment only\n---\n" + minimalVMI + "---\n" + strings.Replace(minimalVMI, "  name: a", "  name: b\n  bogus: true", 1) + "---\n" + minimalVMI,
			wantKinds: []string{KindVirtualMachineInstance, KindVirtualMachineInstance},
			wantErrs:  []wantErr{{1, "metadata.bogus", ErrUnknownField}},
		},
		{
			name: "every unknown field is reported",
			input: `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstanceMigration
metadata: {name: m}
spec: {vmiName: x, sendTo: {}, receive: {}}
`,
			wantErrs: []wantErr{{0, "spec.receive", ErrUnknownField}, {0, "spec.sendTo", ErrUnknownField}},
		},
		{
			name:      "JSON stream",
			input:     `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration","metadata":{"name":"m"},"spec":{"vmiName":"x"}} {"apiVersion":"migrations.kubevirt.io/v1alpha1","kind":"MigrationPolicy","metadata":{"name":"p"},"spec":{"selectors":{}}}`,
			wantKinds: []string{KindVirtualMachineInstanceMigration, KindMigrationPolicy},
		},
		{
			name:      "JSON array",
			input:     `[{"apiVersion":"virtkit.io/v1alpha1","kind":"Node","metadata":{"name":"n1"},"spec":{"unschedulable":true}}]`,
			wantKinds: []string{KindNode},
		},
		{
			name:     "JSON unknown field",
			input:    `{"apiVersion":"virtkit.io/v1alpha1","kind":"Node","metadata":{"name":"n1"},"spec":{"cordoned":true}}`,
			wantErrs: []wantErr{{0, "spec.cordoned", ErrUnknownField}},
		},
		{
			name: "v1 List items",
			input: `apiVersion: v1
kind: List
items:
- apiVersion: kubevirt.io/v1
  kind: VirtualMachineInstanceMigration
  metadata: {name: m}
  spec: {vmiName: x}
- apiVersion: kubevirt.io/v1
  kind: VirtualMachineInstanceMigration
  metadata: {name: m2}
  spec: {vmiName: x, nope: 1}
`,
			wantKinds: []string{KindVirtualMachineInstanceMigration},
			wantErrs:  []wantErr{{0, "items[1].spec.nope", ErrUnknownField}},
		},
		{
			name:     "a scalar document",
			input:    "just a string\n",
			wantErrs: []wantErr{{0, "", ErrInvalidManifest}},
		},
		{
			name:  "empty input",
			input: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := DecodeBytes([]byte(tt.input))
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind)
			}
			assert.Equal(t, tt.wantKinds, kinds)
			if len(tt.wantErrs) == 0 {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			got := decodeErrors(t, err)
			require.Len(t, got, len(tt.wantErrs), "errors: %v", err)
			for i, w := range tt.wantErrs {
				assert.Equal(t, w.doc, got[i].Document, "document of %v", got[i])
				assert.Equal(t, w.path, got[i].Path, "path of %v", got[i])
				assert.ErrorIs(t, got[i], w.err)
			}
		})
	}
}

func TestDecodeErrorNamesPath(t *testing.T) {
	_, err := DecodeBytes([]byte(strings.Replace(minimalVMI, "devices: {}", "devices: {autoattachVSOCK: true}", 1)))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.domain.devices.autoattachVSOCK: not supported: a KubeVirt field for VSOCK")
	assert.Contains(t, err.Error(), "VirtualMachineInstance ns/a")
}

func corpusFiles(t testing.TB) []string {
	dir := filepath.Join("testdata", "kubevirt-examples")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	if len(files) == 0 {
		t.Fatalf("conformance corpus %s not found: it is vendored in the repository", dir)
	}
	return files
}

// TestEncodeRoundTrip decodes every corpus manifest, encodes it (YAML and
// JSON), decodes the result and requires the same objects.
func TestEncodeRoundTrip(t *testing.T) {
	for _, f := range corpusFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			objs, err := DecodeBytes(data)
			if err != nil {
				t.Skipf("not decodable (covered by the conformance test): %v", err)
			}
			for _, format := range []Format{FormatYAML, FormatJSON} {
				var buf bytes.Buffer
				require.NoError(t, EncodeFormat(&buf, format, objs...))
				again, err := DecodeBytes(buf.Bytes())
				require.NoError(t, err, "re-decoding:\n%s", buf.String())
				require.Len(t, again, len(objs))
				for i := range objs {
					assert.True(t, equality.Semantic.DeepEqual(objs[i], again[i]), "format %d: round trip differs:\n%s", format, buf.String())
				}
			}
		})
	}
}

func TestEncodeFillsTypeMetaWithoutMutating(t *testing.T) {
	vmim := &VirtualMachineInstanceMigration{Spec: VirtualMachineInstanceMigrationSpec{VMIName: "v"}}
	vmim.Name = "m"
	var buf bytes.Buffer
	require.NoError(t, Encode(&buf, vmim, vmim))
	assert.Empty(t, vmim.Kind)
	assert.Equal(t, 2, strings.Count(buf.String(), "kind: VirtualMachineInstanceMigration"))
	assert.Contains(t, buf.String(), "---\n")
	objs, err := DecodeBytes(buf.Bytes())
	require.NoError(t, err)
	require.Len(t, objs, 2)
	assert.Equal(t, "v", objs[1].(*VirtualMachineInstanceMigration).Spec.VMIName)
}

func TestDecodeBadYAMLDocumentKeepsOthers(t *testing.T) {
	in := minimalVMI + "---\nkey: [unclosed\n---\n" + minimalVMI + "---\n" + strings.Replace(minimalVMI, "  name: a", "  name: c\n  x: 1", 1)
	objs, err := DecodeBytes([]byte(in))
	assert.Len(t, objs, 2)
	got := decodeErrors(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, 1, got[0].Document)
	assert.ErrorIs(t, got[0], ErrInvalidManifest)
	assert.Equal(t, 3, got[1].Document)
	assert.Equal(t, "metadata.x", got[1].Path)
}

func TestDecodeTypeErrors(t *testing.T) {
	tests := []struct {
		name, insert, path string
	}{
		{"string for bool", "autoattachSerialConsole: \"yes\"", "spec.domain.devices.autoattachSerialConsole"},
		{"object for list", "disks: {name: a}", "spec.domain.devices.disks"},
		{"list for object", "rng: []", "spec.domain.devices.rng"},
		{"number for string", "interfaces: [{name: 5, bridge: {}}]", "spec.domain.devices.interfaces[0].name"},
		{"object for map value", "inputs: [{name: t, type: {x: 1}}]", "spec.domain.devices.inputs[0].type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := strings.Replace(minimalVMI, "devices: {}", "devices:\n      "+tt.insert, 1)
			_, err := DecodeBytes([]byte(in))
			got := decodeErrors(t, err)
			require.Len(t, got, 1, "%v", err)
			assert.Equal(t, tt.path, got[0].Path)
			assert.ErrorIs(t, got[0], ErrInvalidManifest)
		})
	}
	for name, tc := range map[string]struct{ in, path string }{
		"bad time":        {strings.Replace(minimalVMI, "  name: a\n", "  name: a\n  creationTimestamp: yesterday\n", 1), "metadata.creationTimestamp"},
		"null time is ok": {strings.Replace(minimalVMI, "  name: a\n", "  name: a\n  creationTimestamp: null\n", 1), ""},
		"intstr object":   {minimalVMI + "  readinessProbe:\n    tcpSocket: {port: {x: 1}}\n", "spec.readinessProbe.tcpSocket.port"},
		"intstr string":   {minimalVMI + "  readinessProbe:\n    tcpSocket: {port: ssh}\n", ""},
		"float for int":   {minimalVMI + "  terminationGracePeriodSeconds: 1.5\n", "spec.terminationGracePeriodSeconds"},
		"status too":      {minimalVMI + "status:\n  phase: Running\n  activePods: {uid1: n1}\n  bogus: 1\n", "status.bogus"},
		"engine numbers":  {minimalVMI + "status:\n  migrationState:\n    virtkitEngine:\n      predictedTotalSeconds: 12.5\n      measuredDirtyRateBytesPerSecond: x\n", "status.migrationState.virtkitEngine.measuredDirtyRateBytesPerSecond"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeBytes([]byte(tc.in))
			if tc.path == "" {
				require.NoError(t, err)
				return
			}
			got := decodeErrors(t, err)
			require.Len(t, got, 1, "%v", err)
			assert.Equal(t, tc.path, got[0].Path)
		})
	}
}
