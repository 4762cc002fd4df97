package metrics_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/store"
)

// oneDomain is a DomainStatser for the example: one guest that has used
// 90 s of CPU, memory statistics not measured.
type oneDomain struct{}

func (oneDomain) Stats(_ context.Context, name string) (hypervisor.DomainStats, error) {
	return hypervisor.DomainStats{Domain: name, State: hypervisor.StateRunning, CPUTime: hypervisor.Some(90 * time.Second)}, nil
}

func ExampleNewDomainCollector() {
	ctx := context.Background()
	st := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = "default", "web"
	vmi.Labels = map[string]string{"app.kubernetes.io/name": "shop"}
	vmi.Status.Phase = virtkit.Running
	vmi.Status.NodeName = "node-1"
	if err := st.Create(ctx, vmi); err != nil {
		fmt.Println(err)
		return
	}

	c, err := metrics.NewDomainCollector(metrics.DomainSources{
		Objects: st,
		Nodes:   []metrics.NodeSource{{Name: "node-1", Domains: oneDomain{}}},
	}, metrics.Options{ScrapeTimeout: 2 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	mfs, err := reg.Gather()
	if err != nil {
		fmt.Println(err)
		return
	}
	enc := expfmt.NewEncoder(os.Stdout, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		// Memory was not measured: no kubevirt_vmi_memory_* series at all.
		if mf.GetName() == "kubevirt_vmi_cpu_usage_seconds_total" {
			_ = enc.Encode(mf)
		}
	}
	// Output:
	// # HELP kubevirt_vmi_cpu_usage_seconds_total Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).
	// # TYPE kubevirt_vmi_cpu_usage_seconds_total counter
	// kubevirt_vmi_cpu_usage_seconds_total{kubernetes_vmi_label_app_kubernetes_io_name="shop",name="web",namespace="default",node="node-1"} 90
}

func ExampleNewHandler() {
	ctx := context.Background()
	st := store.NewMemory()
	vmi := &virtkit.VirtualMachineInstance{}
	vmi.Namespace, vmi.Name = "default", "web"
	vmi.Status.Phase = virtkit.Running
	vmi.Status.NodeName = "node-1"
	if err := st.Create(ctx, vmi); err != nil {
		fmt.Println(err)
		return
	}
	dom, err := metrics.NewDomainCollector(metrics.DomainSources{
		Objects: st,
		Nodes:   []metrics.NodeSource{{Name: "node-1", Domains: oneDomain{}}},
	}, metrics.Options{ScrapeTimeout: 2 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The domain collector is streamed, so it goes into no registry; other
	// collectors are gathered from reg as usual.
	reg := prometheus.NewRegistry()
	h := metrics.NewHandler(reg, dom)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "kubevirt_vmi_cpu_usage_seconds_total") {
			fmt.Println(line)
		}
	}
	// Output:
	// kubevirt_vmi_cpu_usage_seconds_total{node="node-1",namespace="default",name="web"} 90
}
