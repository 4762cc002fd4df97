package realqemu_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit/migration/bench"
	"github.com/virtkit/virtkit/migration/bench/realqemu"
)

// A profile becomes the tiny guest's memory, dirtier and speed cap; what
// the guest cannot do is refused with the field's path.
func ExampleRealise() {
	ws := resource.MustParse("128Mi")
	g, errs := realqemu.Realise(0, bench.Profile{
		Name: "throttle-needed", Memory: resource.MustParse("256Mi"), Bandwidth: resource.MustParse("8Mi"),
		DirtyRate: resource.MustParse("64Mi"), WorkingSet: &ws, AllowAutoConverge: true,
	})
	fmt.Println(len(errs), g.MemoryMiB, g.Bandwidth>>20, g.KernelArgs())

	_, errs = realqemu.Realise(1, bench.Profile{
		Name: "too-small", Memory: resource.MustParse("64Mi"), Bandwidth: resource.MustParse("8Mi"),
	})
	fmt.Println(errs.ToAggregate())
	// Output:
	// 0 256 8 console=ttyS0 quiet panic=-1 dirty_mb_s=64 dirty_mb=128
	// profiles[1].memory: Invalid value: "64Mi": the real guest takes whole MiB from 128Mi to 1024Mi
}
