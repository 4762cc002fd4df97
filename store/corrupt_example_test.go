package store_test

import (
	"errors"
	"fmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// A backend checks every value it reads with DecodeStored; what does not
// hold a valid object for its key is a *CorruptError naming the key to
// repair.
func ExampleScheme_DecodeStored() {
	scheme := store.NewMemory().Scheme()
	kind, _ := scheme.KindOf(&virtkit.VirtualMachineInstance{})
	key := store.Key{Namespace: "default", Name: "zzpoison"}

	_, err := scheme.DecodeStored(kind, store.StoredValue{
		Key: key, StorageKey: "/virtkit/VirtualMachineInstance/default/zzpoison", ResourceVersion: "42",
		Data: []byte(`{"kind":"VirtualMachineInstance","metadata":{"name":"other","namespace":"default"}}`),
	}, 0)
	var ce *store.CorruptError
	fmt.Println(errors.Is(err, store.ErrCorrupt), errors.As(err, &ce) && ce.Reason == store.CorruptKey)
	fmt.Println(err)

	obj, err := scheme.DecodeStored(kind, store.StoredValue{
		Key: key, ResourceVersion: "43",
		Data: []byte(`{"metadata":{"name":"zzpoison","namespace":"default"}}`),
	}, 0)
	fmt.Println(err, obj.GetObjectKind().GroupVersionKind().Kind, obj.GetResourceVersion())
	// Output:
	// true true
	// VirtualMachineInstance default/zzpoison: stored object is corrupt (key) at "/virtkit/VirtualMachineInstance/default/zzpoison", resourceVersion 42: metadata names "default/other", the key is "default/zzpoison"
	// <nil> VirtualMachineInstance 43
}
