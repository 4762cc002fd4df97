package controller_test

import (
	"fmt"
	"time"

	"github.com/virtkit/virtkit"
)

// A node agent that fences after 60 s publishes it on its Node; the node
// health controller fails that node's VMIs no sooner than 90 s after its
// last heartbeat, whatever its own grace periods say.
func ExampleMinNodeGrace() {
	fence, err := virtkit.ParseFenceTimeout("1m0s") // the Node's virtkit.io/fence-timeout
	if err != nil {
		fmt.Println(err)
		return
	}
	grace := 40*time.Second + 30*time.Second // monitor + unresponsive grace
	fmt.Println(max(grace, virtkit.MinNodeGrace(fence)))
	// Output: 1m30s
}
