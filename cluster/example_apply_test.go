package cluster_test

import (
	"context"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
)

// startAndApply starts an embedded cluster (cluster.New, Start) and applies
// the manifests to it (virtkit.DecodeBytes, Apply). stop cancels the
// cluster and waits for Start to return.
func startAndApply(timeout time.Duration, manifests string) (context.Context, *cluster.Cluster, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	c, err := cluster.New(cluster.Options{})
	if err != nil {
		cancel()
		return nil, nil, nil, err
	}
	stopped := make(chan struct{})
	go func() { _ = c.Start(ctx); close(stopped) }()
	stop := func() { cancel(); <-stopped }
	objs, err := virtkit.DecodeBytes([]byte(manifests))
	if err == nil {
		err = c.Apply(ctx, objs...)
	}
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return ctx, c, stop, nil
}
