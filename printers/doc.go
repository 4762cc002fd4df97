// Package printers holds the printer columns of virtkit's kinds (those of
// KubeVirt's and CDI's CRDs, and kube-apiserver's for events) and renders
// them: [Columns] and [NewTable] build the meta.k8s.io Table the API server
// answers kubectl with, and [Printer] writes a Table as kubectl prints it.
// The API server and the virtkit CLI both use them, so `kubectl get`,
// `virtkit get` through the API and `virtkit get --store` print the same
// columns.
//
// The kinds' names (plural, singular, short names, categories) are the
// root package's: see virtkit.NamesOf.
//
// The package imports only the root package and apimachinery: the data
// plane (the API server) and the CLI may both import it.
package printers
