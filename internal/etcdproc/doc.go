// Package etcdproc runs a real etcd server as a separate operating system
// process, for tests that must kill it with SIGKILL and restart it on the
// same data directory: a single member on loopback ports chosen once and
// kept across restarts, so clients reconnect to the same endpoint.
//
// The server binary is found by [FindBinary]: $VIRTKIT_ETCD_BIN, then
// build/bin/etcd under the module root (hack/etcd.sh builds it there from the
// go.etcd.io/etcd/server/v3 version pinned in go.mod), then etcd on $PATH.
package etcdproc
