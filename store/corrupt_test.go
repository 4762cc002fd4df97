package store_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

func vmiKind(t *testing.T, s *store.Scheme) store.Kind {
	t.Helper()
	k, err := s.KindOf(&virtkit.VirtualMachineInstance{})
	require.NoError(t, err)
	return k
}

func TestDecodeStored(t *testing.T) {
	s := store.NewMemory().Scheme()
	kind := vmiKind(t, s)
	key := store.Key{Namespace: "default", Name: "vm1"}
	meta := `"metadata":{"name":"vm1","namespace":"default"}`
	for _, tc := range []struct {
		name   string
		data   string
		max    int
		reason store.CorruptReason // "" = valid
	}{
		{name: "valid", data: `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance",` + meta + `}`},
		{name: "no type meta is filled in", data: `{` + meta + `}`},
		{name: "small exponents are fine", data: `{` + meta + `,"spec":{"domain":{"memory":{"guest":"1e3"}}}}`},
		{name: "exponent-like label value", data: `{"metadata":{"name":"vm1","namespace":"default","labels":{"a":"x1e99999"}}}`},
		{name: "escaped quote in a string", data: `{"metadata":{"name":"vm1","namespace":"default","labels":{"a":"\"1e5"}}}`},
		{name: "not JSON", data: `not json{`, reason: store.CorruptJSON},
		{name: "empty", data: ``, reason: store.CorruptJSON},
		{name: "wrong type", data: `{` + meta + `,"spec":"x"}`, reason: store.CorruptJSON},
		{name: "null", data: `null`, reason: store.CorruptKey},
		{name: "another kind", data: `{"kind":"Node",` + meta + `}`, reason: store.CorruptKind},
		{name: "malformed apiVersion", data: `{"apiVersion":"a/b/c",` + meta + `}`, reason: store.CorruptKind},
		{name: "another name", data: `{"metadata":{"name":"vm2","namespace":"default"}}`, reason: store.CorruptKey},
		{name: "no namespace", data: `{"metadata":{"name":"vm1"}}`, reason: store.CorruptKey},
		{name: "too large", data: `{` + meta + `}`, max: 10, reason: store.CorruptSize},
		// resource.Quantity would spend minutes rounding these.
		{name: "huge negative exponent", data: `{` + meta + `,"spec":{"domain":{"memory":{"guest":"1e-999999999"}}}}`, reason: store.CorruptJSON},
		{name: "huge exponent with spaces", data: `{` + meta + `,"spec":{"domain":{"memory":{"guest":" 1.5E+0000001001 "}}}}`, reason: store.CorruptJSON},
		{name: "huge exponent as a number", data: `{` + meta + `,"spec":{"domain":{"memory":{"guest":1e-99999}}}}`, reason: store.CorruptJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				obj virtkit.Object
				err error
			}
			done := make(chan result, 1)
			go func() {
				obj, err := s.DecodeStored(kind, store.StoredValue{Key: key, StorageKey: "/k/default/vm1", ResourceVersion: "5", Data: []byte(tc.data)}, tc.max)
				done <- result{obj, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(20 * time.Second): // hang guard: a decode takes microseconds
				t.Fatal("DecodeStored did not return")
			}
			if tc.reason == "" {
				require.NoError(t, r.err)
				assert.Equal(t, "VirtualMachineInstance", r.obj.GetObjectKind().GroupVersionKind().Kind)
				assert.Equal(t, "kubevirt.io/v1", r.obj.GetObjectKind().GroupVersionKind().GroupVersion().String())
				assert.Equal(t, "5", r.obj.GetResourceVersion())
				return
			}
			require.ErrorIs(t, r.err, store.ErrCorrupt)
			var ce *store.CorruptError
			require.True(t, errors.As(r.err, &ce))
			assert.Equal(t, tc.reason, ce.Reason, "%v", r.err)
			assert.Equal(t, key, ce.Key)
			assert.Contains(t, r.err.Error(), `"/k/default/vm1"`)
		})
	}
}

func TestCorruptErrorIsBounded(t *testing.T) {
	err := &store.CorruptError{Kind: "K", StorageKey: strings.Repeat("k\xff", 1000), Reason: store.CorruptJSON, Err: errors.New(strings.Repeat("x", 10000))}
	assert.Less(t, len(err.Error()), 1200)
	assert.NotContains(t, err.Error(), "\xff")
	require.ErrorIs(t, err, store.ErrCorrupt)
	assert.ErrorIs(t, (&store.CorruptError{}), store.ErrCorrupt)
}

// BenchmarkDecodeStored: the checks a backend applies to every value it
// reads, on a VMI as the store writes it; "json only" is the plain
// json.Unmarshal the etcd store did before.
func BenchmarkDecodeStored(b *testing.B) {
	s := store.NewMemory().Scheme()
	kind, err := s.KindOf(&virtkit.VirtualMachineInstance{})
	require.NoError(b, err)
	data := []byte(`{"kind":"VirtualMachineInstance","apiVersion":"kubevirt.io/v1","metadata":{"name":"vm1","namespace":"default","uid":"6a1b7c4e-0d7b-4f8e-9a52-0b1f5c8d2e11","generation":1,"creationTimestamp":"2026-12-03T07:00:00Z","labels":{"kubevirt.io/vm":"vm1","kubevirt.io/nodeName":"node-1"},"ownerReferences":[{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","name":"vm1","uid":"0b9a7f3c-1111-4a4a-8b8b-123456789abc","controller":true,"blockOwnerDeletion":true}],"finalizers":["kubevirt.io/virtualMachineControllerFinalize"]},"spec":{"domain":{"resources":{"requests":{"memory":"64Mi"}},"memory":{"guest":"64Mi"},"cpu":{"cores":1,"sockets":1,"threads":1},"machine":{"type":"q35"},"devices":{"disks":[{"name":"containerdisk","disk":{"bus":"virtio"}},{"name":"cloudinitdisk","disk":{"bus":"virtio"}}],"interfaces":[{"name":"default","masquerade":{}}]}},"networks":[{"name":"default","pod":{}}],"volumes":[{"name":"containerdisk","containerDisk":{"image":"quay.io/containerdisks/fedora:latest"}},{"name":"cloudinitdisk","cloudInitNoCloud":{"userData":"#cloud-config\npassword: fedora\nchpasswd: { expire: False }\n"}}]},"status":{"phase":"Running","nodeName":"node-1","conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-12-03T07:00:05Z"}],"interfaces":[{"name":"default","ipAddress":"10.0.2.2","mac":"52:54:00:12:34:56","infoSource":"domain, guest-agent"}],"guestOSInfo":{"name":"Fedora Linux"},"migrationMethod":"BlockMigration","qosClass":"Burstable"}}`)
	v := store.StoredValue{Key: store.Key{Namespace: "default", Name: "vm1"}, StorageKey: "/virtkit/VirtualMachineInstance/default/vm1", ResourceVersion: "9", Data: data}
	_, err = s.DecodeStored(kind, v, 0)
	require.NoError(b, err)
	b.Run("checked", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := s.DecodeStored(kind, v, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json only", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			if err := json.Unmarshal(data, kind.New()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
