package apiserver_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/store"
)

const benchObjects = 500

func benchVM(i int) *virtkit.VirtualMachine {
	halted := virtkit.RunStrategyHalted
	vm := &virtkit.VirtualMachine{}
	vm.Name, vm.Namespace = fmt.Sprintf("vm-%04d", i), "default"
	vm.Spec.RunStrategy = &halted
	vm.Spec.Template = &virtkit.VirtualMachineInstanceTemplateSpec{}
	virtkit.SetDefaults(vm)
	return vm
}

func benchSetup(b *testing.B) (*store.Memory, *dynamic.DynamicClient) {
	b.Helper()
	st := newStore(b)
	for i := range benchObjects {
		require.NoError(b, st.Create(b.Context(), benchVM(i)))
	}
	ts := startServer(b, st, apiserver.GenericOptions{})
	cfg := ts.admin()
	dc, err := dynamic.NewForConfig(cfg)
	require.NoError(b, err)
	return st, dc
}

// List of benchObjects VMs: direct store calls against the same store
// through the API (TLS, JSON, client-go's dynamic client).
func BenchmarkList(b *testing.B) {
	st, dc := benchSetup(b)
	b.Run("store", func(b *testing.B) {
		for b.Loop() {
			var l virtkit.VirtualMachineList
			require.NoError(b, st.List(b.Context(), &l, store.ListOptions{Namespace: "default"}))
		}
		b.ReportMetric(float64(benchObjects*b.N)/b.Elapsed().Seconds(), "objects/s")
	})
	b.Run("api", func(b *testing.B) {
		for b.Loop() {
			l, err := dc.Resource(vmGVR).Namespace("default").List(b.Context(), metav1.ListOptions{})
			require.NoError(b, err)
			require.Len(b, l.Items, benchObjects)
		}
		b.ReportMetric(float64(benchObjects*b.N)/b.Elapsed().Seconds(), "objects/s")
	})
}

const benchWatchers = 100

// 100 concurrent watchers each receive every update: events delivered per
// second, direct store watches against API watches.
func BenchmarkWatch100(b *testing.B) {
	st, dc := benchSetup(b)
	seq := 0 // every update changes the labels, across runs
	run := func(b *testing.B, open func(ctx context.Context) (<-chan struct{}, error)) {
		ctx, cancel := context.WithCancel(b.Context())
		defer cancel()
		var wg sync.WaitGroup
		got := make(chan int, benchWatchers)
		for range benchWatchers {
			ch, err := open(ctx)
			require.NoError(b, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				n := 0
				for range ch {
					if n++; n == b.N {
						break
					}
				}
				got <- n // b.N, or fewer if the watch ended early
				for range ch {
				}
			}()
		}
		vm := &virtkit.VirtualMachine{}
		require.NoError(b, st.Get(ctx, store.Key{Namespace: "default", Name: "vm-0000"}, vm))
		b.ResetTimer()
		for range b.N {
			seq++
			vm.Labels = map[string]string{"i": fmt.Sprint(seq)}
			require.NoError(b, st.Update(ctx, vm))
		}
		for range benchWatchers {
			require.Equal(b, b.N, <-got, "a watcher missed events")
		}
		b.StopTimer()
		b.ReportMetric(float64(benchWatchers*b.N)/b.Elapsed().Seconds(), "events/s")
		cancel()
		wg.Wait()
	}
	b.Run("store", func(b *testing.B) {
		run(b, func(ctx context.Context) (<-chan struct{}, error) {
			evs, err := st.Watch(ctx, &virtkit.VirtualMachineList{}, store.WatchOptions{Namespace: "default"})
			if err != nil {
				return nil, err
			}
			out := make(chan struct{})
			go func() {
				defer close(out)
				for range evs {
					out <- struct{}{}
				}
			}()
			return out, nil
		})
	})
	b.Run("api", func(b *testing.B) {
		var l virtkit.VirtualMachineList
		require.NoError(b, st.List(b.Context(), &l, store.ListOptions{}))
		run(b, func(ctx context.Context) (<-chan struct{}, error) {
			w, err := dc.Resource(vmGVR).Namespace("default").Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
			if err != nil {
				return nil, err
			}
			out := make(chan struct{})
			go func() {
				defer close(out)
				defer w.Stop()
				for ev := range w.ResultChan() {
					if ev.Type == watch.Modified {
						select {
						case out <- struct{}{}:
						case <-ctx.Done():
							return
						}
					}
				}
			}()
			return out, nil
		})
	})
}
