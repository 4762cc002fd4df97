package cluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/store"
)

// A DataVolume on the embedded default: the DataVolume controller
// schedules it on a node, whose import worker creates the blank disk in the
// node-local storage class (under a temporary directory unless
// Options.Storage.Dir names one).
func ExampleStorageOptions() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	stopped := make(chan struct{})
	go func() { _ = c.Start(ctx); close(stopped) }()
	// Start removes the temporary storage directory when it returns.
	defer func() { cancel(); <-stopped }()
	objs, err := virtkit.DecodeBytes([]byte(`apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: scratch
spec:
  source:
    blank: {}
  storage:
    resources:
      requests:
        storage: 64Mi
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Apply(ctx, objs...); err != nil {
		fmt.Println(err)
		return
	}
	dv, err := cluster.WaitFor(ctx, c.Store(), store.Key{Namespace: "default", Name: "scratch"},
		func() *virtkit.DataVolume { return &virtkit.DataVolume{} }, &virtkit.DataVolumeList{},
		func(dv *virtkit.DataVolume, found bool) bool { return found && dv.Status.Phase.IsFinal() })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(dv.Status.Phase, dv.Status.Progress, dv.Annotations[virtkit.DataVolumeStorageClassAnnotation])
	// Output: Succeeded 100.00% local
}
