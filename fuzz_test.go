package virtkit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// fuzzSeeds returns the conformance corpus (when present) and a few inline
// manifests, so fuzzing works from a fresh clone too.
func fuzzSeeds(f *testing.F) {
	f.Add([]byte(minimalVMI))
	f.Add([]byte(validVMIManifest))
	f.Add([]byte(`{"apiVersion":"virtkit.io/v1alpha1","kind":"Node","metadata":{"name":"n"},"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: kubevirt.io/v1\n  kind: VirtualMachineInstanceMigration\n  metadata: {name: m}\n  spec: {vmiName: x}\n"))
	files, _ := filepath.Glob(filepath.Join("testdata", "kubevirt-examples", "*.yaml"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
}

// FuzzDecode: Decode never panics or hangs, and whatever it accepts encodes
// and decodes again.
func FuzzDecode(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, _ := DecodeBytes(data)
		if len(objs) == 0 {
			return
		}
		for _, format := range []Format{FormatJSON, FormatYAML} {
			var buf bytes.Buffer
			if err := EncodeFormat(&buf, format, objs...); err != nil {
				t.Fatalf("encode of decoded objects failed: %v", err)
			}
			again, err := DecodeBytes(buf.Bytes())
			if err != nil {
				t.Fatalf("re-decode failed: %v\n%s", err, buf.String())
			}
			if len(again) != len(objs) {
				t.Fatalf("re-decode gave %d objects, want %d", len(again), len(objs))
			}
		}
	})
}

// FuzzDecodeDefaultValidate: the whole admission path never panics, and
// defaulting is idempotent.
func FuzzDecodeDefaultValidate(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, _ := DecodeBytes(data)
		for _, obj := range objs {
			opts := DefaultOptions{NewUUID: fixedUUID}
			opts.SetDefaults(obj)
			first := Validate(obj)
			again, ok := obj.DeepCopyObject().(Object)
			if !ok {
				t.Fatalf("deep copy of %T is not an Object", obj)
			}
			opts.SetDefaults(again)
			if second := Validate(again); len(second) != len(first) {
				t.Fatalf("validation changed after defaulting twice: %v vs %v", first, second)
			}
		}
	})
}
