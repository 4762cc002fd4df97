package apiserver_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/apiserver"
	"github.com/virtkit/virtkit/controller"
	"github.com/virtkit/virtkit/store"
)

const benchServerObjects = 1000

// benchServer is one API server over its own memory store.
type benchServer struct {
	name   string
	store  *store.Memory
	client dynamic.ResourceInterface
}

// benchServers starts the server without and with its watch cache, each over a memory store holding the system namespaces
// and n VMs.
func benchServers(b *testing.B, n int) []benchServer {
	b.Helper()
	var out []benchServer
	for _, name := range []string{"generic", "generic-cache"} {
		st, err := store.NewMemoryWithOptions(store.Options{StartResourceVersion: 1})
		require.NoError(b, err)
		require.NoError(b, controller.EnsureNamespaces(b.Context(), st, virtkit.SystemNamespaces()...))
		for i := range n {
			require.NoError(b, st.Create(b.Context(), benchVM(i)))
		}
		ts := startGeneric(b, apiserver.GenericOptions{Store: st, WatchCache: name == "generic-cache"})
		dc, err := dynamic.NewForConfig(ts.admin())
		require.NoError(b, err)
		out = append(out, benchServer{name: name, store: st, client: dc.Resource(vmGVR).Namespace("default")})
	}
	return out
}

func benchVMUnstructured(b *testing.B, name string) *unstructured.Unstructured {
	b.Helper()
	vm := benchVM(0)
	vm.Name = name
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(vm)
	require.NoError(b, err)
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("kubevirt.io/v1")
	u.SetKind(virtkit.KindVirtualMachine)
	return u
}

// Creates of VMs through each server (admission chain, store write).
func BenchmarkServersCreate(b *testing.B) {
	for _, s := range benchServers(b, 0) {
		b.Run(s.name, func(b *testing.B) {
			i := 0
			cpu0 := processCPU()
			for b.Loop() {
				_, err := s.client.Create(b.Context(), benchVMUnstructured(b, fmt.Sprintf("c-%s-%06d", s.name, i)), metav1.CreateOptions{})
				require.NoError(b, err)
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/create")
		})
	}
}

// Lists of 1,000 VMs through each server.
func BenchmarkServersList1000(b *testing.B) {
	for _, s := range benchServers(b, benchServerObjects) {
		b.Run(s.name, func(b *testing.B) {
			for b.Loop() {
				l, err := s.client.List(b.Context(), metav1.ListOptions{})
				require.NoError(b, err)
				require.Len(b, l.Items, benchServerObjects)
			}
			b.ReportMetric(float64(benchServerObjects*b.N)/b.Elapsed().Seconds(), "objects/s")
		})
	}
}

// A watch through each server delivers 1,000 VMs the store creates.
func BenchmarkServersWatch1000(b *testing.B) {
	for _, s := range benchServers(b, 0) {
		b.Run(s.name, func(b *testing.B) {
			round := 0
			for b.Loop() {
				ctx, cancel := context.WithCancel(b.Context())
				l, err := s.client.List(ctx, metav1.ListOptions{})
				require.NoError(b, err)
				w, err := s.client.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
				require.NoError(b, err)
				for i := range benchServerObjects {
					vm := benchVM(i)
					vm.Name = fmt.Sprintf("w-%d-%04d", round, i)
					require.NoError(b, s.store.Create(ctx, vm))
				}
				// A watch the server ends (the watch cache ends those
				// that fall behind) resumes from the last version seen,
				// as client-go's informers do.
				last := l.GetResourceVersion()
				for got := 0; got < benchServerObjects; {
					e, ok := <-w.ResultChan()
					if !ok {
						w, err = s.client.Watch(ctx, metav1.ListOptions{ResourceVersion: last})
						require.NoError(b, err, "re-watch after %d events", got)
						continue
					}
					if e.Type == watch.Added {
						got++
						last = e.Object.(*unstructured.Unstructured).GetResourceVersion()
					}
				}
				w.Stop()
				cancel()
				round++
			}
			b.ReportMetric(float64(benchServerObjects*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// processCPU is the process's CPU time so far (server and client): a
// measure of a create's cost that other processes' load does not move.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
