package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeJSONDuplicateKeys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		input string
		paths []string
	}{
		{
			name: "every depth",
			input: `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"vm","labels":{"a":"1","a":"2"}},
"spec":{"runStrategy":"Halted","runStrategy":"Always","template":{"spec":{"domain":{"devices":{},
"memory":{"guest":"64Mi","guest":"8Gi"}},
"volumes":[{"name":"root","containerDisk":{"image":"safe","image":"evil"}}]}}}}`,
			paths: []string{
				"metadata.labels[a]",
				"spec.runStrategy",
				"spec.template.spec.domain.memory.guest",
				"spec.template.spec.volumes[0].containerDisk.image",
			},
		},
		{
			name:  "top level",
			input: `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration","kind":"VirtualMachineInstanceMigration","metadata":{"name":"m"},"spec":{"vmiName":"x"}}`,
			paths: []string{"kind"},
		},
		{
			name:  "array of objects and List items",
			input: `[{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration","metadata":{"name":"m"},"spec":{"vmiName":"x","vmiName":"y"}}]}]`,
			paths: []string{"items[0].spec.vmiName"},
		},
		{
			name:  "unknown fields are still named",
			input: `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration","metadata":{"name":"m"},"spec":{"vmiName":"x"},"x":{"y":1,"y":2}}`,
			paths: []string{"x.y"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := DecodeBytes([]byte(tc.input))
			require.Error(t, err)
			assert.Empty(t, objs, "a document with duplicate keys yields no object")
			var paths []string
			for _, de := range decodeErrors(t, err) {
				assert.ErrorIs(t, de, ErrInvalidManifest)
				assert.Equal(t, "duplicate key", de.Detail)
				paths = append(paths, de.Path)
			}
			assert.Equal(t, tc.paths, paths)
		})
	}
}

func TestDecodeJSONDistinctKeysStillDecode(t *testing.T) {
	objs, err := DecodeBytes([]byte(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration",
"metadata":{"name":"m","labels":{"a":"1","b":"1"}},"spec":{"vmiName":"x"}}
{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration","metadata":{"name":"n"},"spec":{"vmiName":"x"}}`))
	require.NoError(t, err)
	assert.Len(t, objs, 2)
}

func TestDecodeYAMLDuplicateKeysRejected(t *testing.T) {
	_, err := DecodeBytes([]byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata: {name: m}\nspec:\n  vmiName: a\n  vmiName: b\n"))
	require.ErrorIs(t, err, ErrInvalidManifest)
}

// encoding/json matches field names case-insensitively, so a key that
// differs only in case would be a duplicate in disguise: it is an unknown
// field.
func TestDecodeJSONCaseVariantKeyIsUnknown(t *testing.T) {
	_, err := DecodeBytes([]byte(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration","metadata":{"name":"m"},"spec":{"vmiName":"x","VMIName":"y"}}`))
	require.ErrorIs(t, err, ErrUnknownField)
	assert.Equal(t, "spec.VMIName", decodeErrors(t, err)[0].Path)
}
