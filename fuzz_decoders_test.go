package virtkit

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// jsonSeeds are JSON manifests, some with duplicate keys at various depths.
var jsonSeeds = []string{
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration","metadata":{"name":"m"},"spec":{"vmiName":"x"}}`,
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"vm"},"spec":{"runStrategy":"Halted","runStrategy":"Always","template":{"spec":{"domain":{"devices":{},"memory":{"guest":"64Mi","guest":"8Gi"}},"volumes":[{"name":"r","containerDisk":{"image":"safe","image":"evil"}}]}}}}`,
	`[{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstanceMigration","metadata":{"name":"m","labels":{"a":"1","a":"2"}},"spec":{"vmiName":"x"}}]}]`,
	`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"v"},"spec":{"domain":{"devices":{},"cpu":{"sockets":65535,"cores":65535,"threads":65535},"memory":{"guest":"100Ei"}}},"status":{"phase":"Scheduled","nodeName":"n1"}}`,
	`{"apiVersion":"virtkit.io/v1alpha1","kind":"Node","metadata":{"name":"x\u001b[31m"}} {"apiVersion":"virtkit.io/v1alpha1","kind":"Node","metadata":{"name":"n"}}`,
}

// yamlSeeds are YAML manifests, some with duplicate keys.
var yamlSeeds = []string{
	minimalVMI,
	"apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstanceMigration\nmetadata: {name: m}\nspec:\n  vmiName: a\n  vmiName: b\n",
	"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items: []\n",
	"apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: v\n  labels: {kubevirt.io/nodeName: n1}\nspec:\n  domain:\n    devices: {}\n    memory: {guest: 64Mi}\n",
}

// yamlRejectsDuplicates is an independent oracle for duplicate keys: JSON is
// YAML, and the strict YAML conversion refuses a key set twice.
func yamlRejectsDuplicates(data []byte) bool {
	_, err := yaml.YAMLToJSONStrict(data)
	return err != nil && strings.Contains(err.Error(), "already set")
}

// FuzzDecodeJSON: the JSON decoder never panics, never accepts a document
// with a duplicate key (checked against the strict YAML parser), and what
// it accepts round-trips.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := DecodeBytes(data)
		if err == nil && len(objs) > 0 && yamlRejectsDuplicates(data) {
			t.Fatalf("accepted a document with a duplicate key:\n%s", data)
		}
		roundTrip(t, objs)
	})
}

// FuzzDecodeYAML: the YAML decoder never panics and what it accepts
// round-trips.
func FuzzDecodeYAML(f *testing.F) {
	for _, s := range yamlSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := DecodeBytes(data)
		if err == nil && len(objs) > 0 && yamlRejectsDuplicates(data) {
			t.Fatalf("accepted a document with a duplicate key:\n%s", data)
		}
		roundTrip(t, objs)
	})
}

func roundTrip(t *testing.T, objs []Object) {
	t.Helper()
	if len(objs) == 0 {
		return
	}
	var buf bytes.Buffer
	if err := EncodeFormat(&buf, FormatJSON, objs...); err != nil {
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

// FuzzAdmit: admission never panics; it clears status on create for every
// kind but Node; an update that changes nothing is always admitted; and an
// admitted object validates the same afterwards.
func FuzzAdmit(f *testing.F) {
	for _, s := range append(append([]string{}, jsonSeeds...), yamlSeeds...) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, _ := DecodeBytes(data)
		for _, obj := range objs {
			DefaultOptions{NewUUID: fixedUUID}.SetDefaults(obj)
			before := len(Validate(obj))
			old, ok := obj.DeepCopyObject().(Object)
			if !ok {
				t.Fatalf("deep copy of %T is not an Object", obj)
			}
			AdmitCreate(obj)
			if _, isNode := obj.(*Node); !isNode {
				if st := reflect.ValueOf(obj).Elem().FieldByName("Status"); st.IsValid() && !st.IsZero() {
					t.Fatalf("status kept on create of %T: %+v", obj, st.Interface())
				}
			}
			same, _ := old.DeepCopyObject().(Object)
			if errs := AdmitUpdate(same, old); len(errs) > 0 {
				t.Fatalf("an unchanged %T was refused: %v", obj, errs)
			}
			if after := len(Validate(same)); after != before {
				t.Fatalf("validation changed after admission: %d vs %d errors", before, after)
			}
		}
	})
}
