package etcd_test

import (
	"testing"

	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/etcd"
	"github.com/virtkit/virtkit/store/storetest"
)

// BenchmarkStores runs the same VMI workload on the memory store and on the
// etcd store (embedded single-member etcd, no fsync) in one run, so the
// figures compare directly.
func BenchmarkStores(b *testing.B) {
	opts := storetest.BenchOptions{}
	b.Run("memory", func(b *testing.B) {
		storetest.Benchmark(b, func(*testing.B) store.Store { return store.NewMemory() }, opts)
	})
	b.Run("etcd", func(b *testing.B) {
		newStore := newStoreFactory(b, etcd.Options{})
		storetest.Benchmark(b, func(b *testing.B) store.Store { return newStore(b) }, opts)
	})
}
