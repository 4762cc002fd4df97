package storage_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cdi/storage"
)

// A node-local default class and a shared class: a ReadWriteMany claim
// without a class name lands on the shared one.
func ExampleClasses_ForDataVolume() {
	classes := storage.Classes{List: []storage.Class{
		storage.Local{Dir: func(node string) string { return "/var/lib/virtkit/" + node }},
		storage.SharedDir{Dir: "/mnt/shared"},
	}}
	size := virtkit.VolumeResourceRequirements{Requests: virtkit.ResourceList{virtkit.ResourceStorage: resource.MustParse("1Gi")}}
	for _, modes := range [][]virtkit.PersistentVolumeAccessMode{{virtkit.ReadWriteOnce}, {virtkit.ReadWriteMany}} {
		spec := &virtkit.DataVolumeSpec{Storage: &virtkit.PersistentVolumeClaimSpec{AccessModes: modes, Resources: size}}
		c, err := classes.ForDataVolume(spec)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(modes[0], c.Name(), c.Shared(), c.Path("node-1", "default", "root"))
	}
	// Output:
	// ReadWriteOnce local false /var/lib/virtkit/node-1/dv/default/root.img
	// ReadWriteMany shared true /mnt/shared/dv/default/root.img
}
