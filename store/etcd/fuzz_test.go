package etcd

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// fuzzStore is a Store without a connection: enough for the key layout and
// the value decoding, which touch no etcd. The bound is small so the fuzzer
// explores near it.
func fuzzStore(t testing.TB) *Store {
	scheme, err := store.NewScheme(store.DefaultKinds()...)
	if err != nil {
		t.Fatal(err)
	}
	return &Store{prefix: DefaultPrefix, scheme: scheme, maxObjectBytes: 64 << 10}
}

func fuzzKind(t testing.TB, s *Store, clusterScoped bool) store.Kind {
	name := "VirtualMachineInstance"
	if clusterScoped {
		name = "Node"
	}
	for _, k := range s.scheme.Kinds() {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("kind %s not registered", name)
	return store.Kind{}
}

// FuzzParseKey: parseKey accepts exactly the keys etcdKey produces for
// valid keys, and maps each back to itself.
func FuzzParseKey(f *testing.F) {
	for _, k := range []string{
		"/virtkit/VirtualMachineInstance/default/vm1", "/virtkit/Node/node-1",
		"/virtkit/VirtualMachineInstance/nonamespace", "/virtkit/VirtualMachineInstance/a/b/c",
		"/virtkit/VirtualMachineInstance//x", "/virtkit/VirtualMachineInstance/ns/..", "/virtkit/Node/",
		"/virtkit/Node/a/b", "/virtkit/VirtualMachineInstanceX/ns/a", "/virtkit/VirtualMachineInstance/ns/\xff",
	} {
		f.Add(k, strings.Contains(k, "/Node/"))
	}
	s := fuzzStore(f)
	f.Fuzz(func(t *testing.T, etcdKey string, clusterScoped bool) {
		kind := fuzzKind(t, s, clusterScoped)
		key, err := s.parseKey(kind, etcdKey)
		if err != nil {
			return
		}
		if back := s.etcdKey(kind, key); back != etcdKey {
			t.Fatalf("parseKey(%q) = %#v, which maps back to %q", etcdKey, key, back)
		}
		if err := store.CheckKey(kind, key); err != nil {
			t.Fatalf("parseKey(%q) accepted a key CheckKey refuses: %v", etcdKey, err)
		}
	})
}

// FuzzDecodeValue: whatever bytes sit at whatever key, decode never panics;
// it either refuses them with a bounded *store.CorruptError naming the key,
// or returns an object of the kind with exactly the key's name and
// namespace, whose stored form is a fixed point after one write.
func FuzzDecodeValue(f *testing.F) {
	for _, v := range []string{
		`not json{`, `null`, `{}`, `[]`, `"x"`, `{"metadata":{"name":"vm1","namespace":"default"}}`,
		`{"kind":"VirtualMachineInstance","apiVersion":"kubevirt.io/v1","metadata":{"name":"vm1","namespace":"default","creationTimestamp":"2026-01-02T03:04:05.123Z"}}`,
		`{"kind":"Node","metadata":{"name":"vm1","namespace":"default"}}`,
		`{"metadata":{"name":"vm1","namespace":"default"},"spec":{"domain":{"memory":{"guest":"1e400"}}}}`,
		`{"metadata":{"name":"vm1","namespace":"default"},"spec":{"domain":{"resources":{"requests":{"memory":"-1Mi"}}}}}`,
		`{"metadata":{"name":"vm1","namespace":"default"},"spec":{"domain":{"memory":{"guest":"1e-999999999"}}}}`,
		`{"metadata":{"name":"vm1","namespace":"default","labels":{"a":"\"1e-99999"}}}`,
	} {
		f.Add("/virtkit/VirtualMachineInstance/default/vm1", []byte(v))
	}
	// The manifests of the repository's examples, as the store writes them.
	files, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "kubevirt-examples", "*.yaml"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		objs, _ := virtkit.DecodeBytes(data)
		for _, o := range objs {
			if _, ok := o.(*virtkit.VirtualMachineInstance); !ok {
				continue
			}
			o.SetNamespace("default")
			o.SetName("vm1")
			if b, err := json.Marshal(o); err == nil {
				f.Add("/virtkit/VirtualMachineInstance/default/vm1", b)
			}
		}
	}
	s := fuzzStore(f)
	kind := fuzzKind(f, s, false)
	f.Fuzz(func(t *testing.T, etcdKey string, value []byte) {
		kv := &mvccpb.KeyValue{Key: []byte(etcdKey), Value: value, ModRevision: 7}
		obj, err := s.decode(kind, kv, 7)
		if err != nil {
			var ce *store.CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("decode error is not a *store.CorruptError: %T %v", err, err)
			}
			if strings.Contains(err.Error(), "decoder panicked") {
				t.Fatalf("a field decoder panicked: %v", err)
			}
			if ce.StorageKey != etcdKey || ce.ResourceVersion != "7" {
				t.Fatalf("error names %q@%s, want %q@7", ce.StorageKey, ce.ResourceVersion, etcdKey)
			}
			if n := len(err.Error()); n > 2048 {
				t.Fatalf("error message of %d bytes: unbounded", n)
			}
			return
		}
		key, kerr := s.parseKey(kind, etcdKey)
		if kerr != nil {
			t.Fatalf("decoded a value at a malformed key %q", etcdKey)
		}
		if store.KeyOf(obj) != key {
			t.Fatalf("decoded %v at key %v", store.KeyOf(obj), key)
		}
		if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind != kind.Name || gvk.GroupVersion().String() != kind.APIVersion {
			t.Fatalf("decoded object is %v", gvk)
		}
		if obj.GetResourceVersion() != "7" {
			t.Fatalf("resourceVersion %q, want 7", obj.GetResourceVersion())
		}
		// What the store writes back decodes, and writing that again
		// changes nothing.
		first, err := s.encode(kind, key, obj)
		if err != nil {
			if errors.Is(err, store.ErrInvalid) {
				return // over the bound once re-encoded (canonical forms can grow)
			}
			t.Fatalf("encoding a decoded object: %v", err)
		}
		again, err := s.decode(kind, &mvccpb.KeyValue{Key: kv.Key, Value: first, ModRevision: 8}, 8)
		if err != nil {
			t.Fatalf("the store's own encoding does not decode: %v\n%s", err, first)
		}
		second, err := s.encode(kind, key, again)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		if string(first) != string(second) {
			t.Fatalf("stored form is not stable:\n%s\n%s", first, second)
		}
	})
}
