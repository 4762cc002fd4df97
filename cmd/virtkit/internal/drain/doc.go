// Package drain is `virtkit drain`, `virtkit cordon` and `virtkit
// uncordon`: kubectl's node verbs as KubeVirt gives them meaning, run by
// the library (controller.Drain, Cordon, Uncordon) against a store.Store.
// That store is the one transport: the control plane's etcd, or its API
// through kube.Store, so the server's authentication, authorization and
// admission apply.
//
// Like package get, a verb is an Options ([Options] for drain,
// [CordonOptions] for cordon and uncordon) that the cobra wiring in
// package main fills from the command line, then Complete, Validate and
// Run against the store main opened.
package drain
