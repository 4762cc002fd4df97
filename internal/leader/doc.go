// Package leader elects one active replica among several processes that
// share an etcd cluster, so that several `virtkit controller` processes can
// run for availability while exactly one runs the controllers.
//
// It uses etcd's own election recipe (go.etcd.io/etcd/client/v3/concurrency):
// each replica holds a session (a lease kept alive by the client) and
// campaigns on one key; the replica whose key has the lowest revision leads.
// When the leader's process dies its lease expires after the session TTL
// and the next candidate takes over.
//
// A leader that loses its session (lease expired because it could not reach
// etcd in time, or the lease was revoked) stops acting at once: the context
// given to its work is cancelled before [Run] returns [ErrLeadershipLost].
// It does not campaign again in the same process: controllers keep state in
// memory (work queues, expectations, caches) that is only known to be right
// after a fresh start, so the process exits non-zero and its supervisor
// (systemd, Kubernetes) restarts it as a candidate, like kube-controller-
// manager does.
//
// etcd's client renews the lease every third of the TTL and ends the
// session when no renewal has been answered for a whole TTL. A renewal
// answered more than two thirds of the TTL after the previous one is
// logged as a warning (the process or etcd stalled), and a lost session's
// log says how long ago the last renewal was answered: a TTL shorter than
// the stalls of a loaded machine costs a live leader its lease.
//
// A candidate whose session ends while it campaigns (etcd unreachable for
// longer than the TTL) returns ErrLeadershipLost as well, for the same
// restart.
//
// Without an etcd client (the memory store: one process, nobody to compete
// with) the caller is always the leader.
package leader
