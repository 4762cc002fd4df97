package kubestorage_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/storage"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// benchSizes are the store sizes the benchmarks run at.
var benchSizes = []int{1000, 10000}

func benchVM(i int) *virtkit.VirtualMachine {
	return &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: fmt.Sprintf("vm-%05d", i), UID: "u", Generation: 1,
		Labels: map[string]string{"app": "bench"},
	}}
}

func newBenchMemory(b *testing.B) *store.Memory {
	m, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1, HistorySize: 1000})
	require.NoError(b, err)
	return m
}

// BenchmarkCreate creates n objects per iteration, through the storage
// (as registry.Store does) and through store.Store.
func BenchmarkCreate(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("kubestorage/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				s := vmStorage(b, newBenchMemory(b))
				b.StartTimer()
				for i := range n {
					vm := benchVM(i)
					require.NoError(b, s.Create(ctx, "/kubevirt.io/virtualmachines/default/"+vm.Name, vm, &virtkit.VirtualMachine{}, 0))
				}
			}
		})
		b.Run(fmt.Sprintf("store/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				m := newBenchMemory(b)
				b.StartTimer()
				for i := range n {
					vm := benchVM(i)
					vm.UID, vm.Generation = "", 0
					require.NoError(b, m.Create(ctx, vm))
				}
			}
		})
	}
}

func filledMemory(b *testing.B, n int) *store.Memory {
	ctx := context.Background()
	m := newBenchMemory(b)
	for i := range n {
		vm := benchVM(i)
		vm.UID, vm.Generation = "", 0
		require.NoError(b, m.Create(ctx, vm))
	}
	return m
}

// BenchmarkList lists all n objects, and the first page of 500.
func BenchmarkList(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes {
		m := filledMemory(b, n)
		s := vmStorage(b, m)
		b.Run(fmt.Sprintf("kubestorage/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				list := &virtkit.VirtualMachineList{}
				require.NoError(b, s.GetList(ctx, "/kubevirt.io/virtualmachines/", storage.ListOptions{Recursive: true, Predicate: storage.Everything}, list))
				require.Len(b, list.Items, n)
			}
		})
		b.Run(fmt.Sprintf("kubestorage-page500/n=%d", n), func(b *testing.B) {
			pred := storage.Everything
			pred.Limit = 500
			for b.Loop() {
				list := &virtkit.VirtualMachineList{}
				require.NoError(b, s.GetList(ctx, "/kubevirt.io/virtualmachines/", storage.ListOptions{Recursive: true, Predicate: pred}, list))
				require.Len(b, list.Items, 500)
			}
		})
		b.Run(fmt.Sprintf("store/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				list := &virtkit.VirtualMachineList{}
				require.NoError(b, m.List(ctx, list, store.ListOptions{}))
				require.Len(b, list.Items, n)
			}
		})
	}
}

// BenchmarkWatch starts a watch with the current n objects as initial
// events and reads them all.
func BenchmarkWatch(b *testing.B) {
	for _, n := range benchSizes {
		m := filledMemory(b, n)
		s := vmStorage(b, m)
		b.Run(fmt.Sprintf("kubestorage/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				w, err := s.Watch(ctx, "/kubevirt.io/virtualmachines/", storage.ListOptions{Recursive: true, Predicate: storage.Everything})
				require.NoError(b, err)
				for range n {
					<-w.ResultChan()
				}
				w.Stop()
				cancel()
			}
		})
		b.Run(fmt.Sprintf("store/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				ch, err := m.Watch(ctx, &virtkit.VirtualMachineList{}, store.WatchOptions{SendInitialEvents: true})
				require.NoError(b, err)
				for range n {
					<-ch
				}
				cancel()
			}
		})
	}
}

// BenchmarkGuaranteedUpdate changes one label of an object among n per
// iteration, through the storage (as registry.Store's Update does: a
// tryUpdate on the current object) and through store.Store.
func BenchmarkGuaranteedUpdate(b *testing.B) {
	ctx := context.Background()
	for _, n := range benchSizes {
		m := filledMemory(b, n)
		s := vmStorage(b, m)
		b.Run(fmt.Sprintf("kubestorage/n=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				key := fmt.Sprintf("/kubevirt.io/virtualmachines/default/vm-%05d", i%n)
				err := s.GuaranteedUpdate(ctx, key, &virtkit.VirtualMachine{}, false, nil,
					func(input runtime.Object, _ storage.ResponseMeta) (runtime.Object, *uint64, error) {
						vm := input.(*virtkit.VirtualMachine)
						vm.Labels["round"] = strconv.Itoa(i)
						return vm, nil, nil
					}, nil)
				require.NoError(b, err)
				i++
			}
		})
		b.Run(fmt.Sprintf("store/n=%d", n), func(b *testing.B) {
			i := 0
			for b.Loop() {
				vm := &virtkit.VirtualMachine{}
				require.NoError(b, m.Get(ctx, store.Key{Namespace: "default", Name: fmt.Sprintf("vm-%05d", i%n)}, vm))
				vm.Labels["round"] = strconv.Itoa(i)
				require.NoError(b, m.Update(ctx, vm))
				i++
			}
		})
	}
}
