// Package wire connects virtkit's components to the metrics collectors:
// it adapts node agents, reconcilers and the embedded cluster to the small
// source interfaces package metrics reads, and registers or serves the
// collectors of a whole cluster ([RegisterCluster], [ClusterHandler],
// [StartClusterHandler]), of one node agent's process ([RegisterNode]) or
// of a control-plane process ([RegisterControlPlane]).
//
// Package metrics imports none of the packages that feed it (cluster,
// controller, node); this package is where they meet.
//
//	reg := prometheus.NewRegistry()
//	if err := wire.RegisterCluster(reg, c, metrics.Options{}); err != nil {
//		return err
//	}
//	http.Handle("/metrics", metrics.Handler(reg))
package wire
