package store_test

import (
	"testing"

	"github.com/virtkit/virtkit/store"
	"github.com/virtkit/virtkit/store/storetest"
)

// BenchmarkMemory: Create/Get/Update/List over 10,000 VMIs, and one write
// fanned out to 100 watchers.
func BenchmarkMemory(b *testing.B) {
	storetest.Benchmark(b, func(*testing.B) store.Store { return store.NewMemory() }, storetest.BenchOptions{})
}
