package metrics_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/store"
)

// A store wrapped by InstrumentStore records every call as KubeVirt's REST
// client families; use the wrapper wherever the store is used and
// register it once.
func ExampleInstrumentStore() {
	st, err := metrics.InstrumentStore(store.NewMemory(), "memory")
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(st)

	ctx := context.Background()
	vm := &virtkit.VirtualMachine{}
	vm.Namespace, vm.Name = "default", "web"
	if err := st.Create(ctx, vm); err != nil {
		panic(err)
	}
	_ = st.Get(ctx, store.Key{Namespace: "default", Name: "missing"}, &virtkit.VirtualMachine{})

	out, err := testutil.CollectAndFormat(st, expfmt.TypeTextPlain, "kubevirt_rest_client_requests_total", "kubevirt_vm_created_by_pod_total")
	if err != nil {
		panic(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			fmt.Println(l)
		}
	}
	// Output:
	// kubevirt_rest_client_requests_total{code="201",host="memory",method="POST",resource="virtualmachines",verb="CREATE"} 1
	// kubevirt_rest_client_requests_total{code="404",host="memory",method="GET",resource="virtualmachines",verb="GET"} 1
	// kubevirt_vm_created_by_pod_total{namespace="default"} 1
}
