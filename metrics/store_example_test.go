package metrics_test

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/store"
)

// corruptSource stands in for the etcd store's CorruptObjects.
type corruptSource []store.CorruptError

func (c corruptSource) CorruptObjects() []store.CorruptError { return c }

// A StoreCollector exports one series per corrupt stored value, keyed by
// the etcd key an operator repairs.
func ExampleNewStoreCollector() {
	src := corruptSource{{Kind: "VirtualMachineInstance", StorageKey: "/virtkit/VirtualMachineInstance/default/zzpoison", Reason: store.CorruptJSON}}
	c, err := metrics.NewStoreCollector(src, metrics.Options{})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	err = testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP virtkit_store_undecodable_objects Stored objects the store skips because they are not valid objects for their key (1 per key; repair by rewriting or deleting the key).
# TYPE virtkit_store_undecodable_objects gauge
virtkit_store_undecodable_objects{key="/virtkit/VirtualMachineInstance/default/zzpoison",kind="VirtualMachineInstance",reason="json"} 1
`))
	fmt.Println(err)
	// Output: <nil>
}
