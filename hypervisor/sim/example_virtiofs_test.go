package sim_test

import (
	"context"
	"fmt"

	"github.com/virtkit/virtkit/hypervisor/sim"
)

// The simulated host models a virtiofs share as its tag and directory; no
// virtiofsd runs.
func ExampleHost_ServeVirtiofs() {
	h := sim.New(sim.Options{Name: "node-a"})
	if err := h.ServeVirtiofs(context.Background(), "default_web", "app-config", "/run/virtkit/default_web/virtiofs/app-config"); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(h.VirtiofsShares("default_web"))
	h.StopVirtiofs("default_web")
	fmt.Println(len(h.VirtiofsShares("default_web")))
	// Output:
	// map[app-config:/run/virtkit/default_web/virtiofs/app-config]
	// 0
}
