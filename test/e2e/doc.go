// Package e2e holds end-to-end tests that run virtkit as separate operating
// system processes (`virtkit controller`, `virtkit node`, `virtkit apply`,
// `virtkit get`) against one embedded etcd server: leader failover of the
// controllers, loss and return of a node, the objects a user sees
// afterwards, and a live migration between two simulated node processes
// with the guest's services (port-forward to HTTP and SSH, the VNC
// display) reached through the API before and after it. The virtkit binary is built once per test run.
//
// The tests need no daemons and no root; they are skipped with -short.
package e2e
