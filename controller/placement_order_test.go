package controller

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// The VMIs waiting for a node are handed back in one order on every call:
// a virtual cluster's single worker places them in that order.
func TestPlacementWaitingRequestsInAStableOrder(t *testing.T) {
	c := &placementCache{waiting: map[store.Key]bool{}}
	for _, k := range []store.Key{{Namespace: "b", Name: "x"}, {Namespace: "a", Name: "z"}, {Namespace: "a", Name: "c"}, {Namespace: "b", Name: "a"}} {
		c.waiting[k] = true
	}
	want := []reconcile.Request{{Namespace: "a", Name: "c"}, {Namespace: "a", Name: "z"}, {Namespace: "b", Name: "a"}, {Namespace: "b", Name: "x"}}
	for range 20 {
		assert.Equal(t, want, c.waitingRequests())
	}
}
