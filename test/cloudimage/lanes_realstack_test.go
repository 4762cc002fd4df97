//go:build realstack && cgo && (libvirt || libvirt_dlopen)

package cloudimage_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/virtkit/virtkit/hypervisor/libvirt/libvirttest"
)

// Each Debian guest keeps one core busy under TCG, and CI has two: the
// tests that boot one guest on one node run two at a time, one on each
// libvirtd (A and B, see hack/realstack/libvirtd.sh). Never two clusters
// on one daemon at once: a node agent removes the shut-off (or only
// defined) virtkit domains on its host that its own store does not know,
// which would be the other test's guest between define and start.
var lanes = func() chan string {
	c := make(chan string, 2)
	c <- libvirttest.SourceURI
	c <- libvirttest.PeerURI
	return c
}()

// laneURIs maps a test to the daemon its lane holds.
var laneURIs sync.Map // *testing.T -> string

// parallelLane marks t parallel, waits for a free daemon and holds it
// until t's cleanups (its cluster's among them) have run.
func parallelLane(t *testing.T) {
	t.Helper()
	t.Parallel()
	uri := <-lanes
	laneURIs.Store(t, uri)
	t.Cleanup(func() {
		laneURIs.Delete(t)
		lanes <- uri
	})
	if uri == libvirttest.PeerURI {
		c, err := net.DialTimeout("tcp", "127.0.0.1:16510", time.Second)
		if err != nil {
			unavailable(t, "libvirtd B ("+libvirttest.PeerURI+") not listening: "+err.Error()+"; "+howTo)
		}
		_ = c.Close()
	}
	t.Logf("libvirtd: %s", uri)
}

// laneURI is the daemon t runs its guests on: its lane's, else A.
func laneURI(t *testing.T) string {
	if uri, ok := laneURIs.Load(t); ok {
		return uri.(string)
	}
	return sourceURI
}
