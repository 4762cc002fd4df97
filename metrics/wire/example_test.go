package wire_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/metrics"
	"github.com/virtkit/virtkit/metrics/wire"
)

// StartClusterHandler serves a whole embedded cluster's metrics, with the
// control-plane collector watching phase transitions until ctx ends.
func ExampleStartClusterHandler() {
	c, err := cluster.New(cluster.Options{Nodes: 1})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h, err := wire.StartClusterHandler(ctx, c, metrics.Options{})
	if err != nil {
		panic(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	fmt.Println(strings.Contains(rec.Body.String(), "kubevirt_info{"))
	// Output: true
}
