package kubestorage_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/storage"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver/kubestorage"
	"github.com/virtkit/virtkit/store"
)

// A registry.Store writes through the storage; a controller reads the same
// object through store.Store.
func Example() {
	ctx := context.Background()
	st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	if err != nil {
		panic(err)
	}
	vms, err := kubestorage.New(st, "/kubevirt.io/virtualmachines",
		func() runtime.Object { return &virtkit.VirtualMachine{} },
		func() runtime.Object { return &virtkit.VirtualMachineList{} })
	if err != nil {
		panic(err)
	}
	in := &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vm1", UID: "u-1", Generation: 1}}
	out := &virtkit.VirtualMachine{}
	if err := vms.Create(ctx, "/kubevirt.io/virtualmachines/default/vm1", in, out, 0); err != nil {
		panic(err)
	}

	got := &virtkit.VirtualMachine{}
	if err := st.Get(ctx, store.Key{Namespace: "default", Name: "vm1"}, got); err != nil {
		panic(err)
	}
	fmt.Println("store sees", got.Name, "uid", got.UID, "same resourceVersion:", got.ResourceVersion == out.ResourceVersion)

	list := &virtkit.VirtualMachineList{}
	err = vms.GetList(ctx, "/kubevirt.io/virtualmachines/default", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list)
	if err != nil {
		panic(err)
	}
	fmt.Println("listed", len(list.Items))
	// Output:
	// store sees vm1 uid u-1 same resourceVersion: true
	// listed 1
}

// RESTOptionsGetter gives a registry.Store (CompleteWithOptions) storage
// over the store.
func ExampleRESTOptionsGetter() {
	st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
	if err != nil {
		panic(err)
	}
	getter := kubestorage.RESTOptionsGetter(st, kubestorage.Options{})
	opts, err := getter.GetRESTOptions(schema.GroupResource{Group: "kubevirt.io", Resource: "virtualmachines"}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(opts.ResourcePrefix)
	s, _, err := opts.Decorator(opts.StorageConfig, opts.ResourcePrefix, nil,
		func() runtime.Object { return &virtkit.VirtualMachine{} },
		func() runtime.Object { return &virtkit.VirtualMachineList{} }, nil, nil, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.(*kubestorage.Storage).Kind().Name)
	// Output:
	// /kubevirt.io/virtualmachines
	// VirtualMachine
}
